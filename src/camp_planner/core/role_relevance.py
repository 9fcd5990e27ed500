"""Relevance by role: what a family of contexts keeps, learned once, applied to any member.

A template context (:mod:`camp_planner.core.context`) becomes a different concrete context on
every task, at planning time, where learning its CSIs from the simulator is not affordable
(NAMO at 10 × 10: seconds of CPU per room set even at building scale). What the CSIs of a
room context say is, however, a matter of roles: a box matters because its room is allowed,
or next to an allowed one (``ContextSymmetry.csi_context_roles``), not because of which room
it is. :class:`RoleRelevance` summarises the CSIs learned for a *basis* of contexts of the
family by role, and gives any other member the variables that were relevant in its roles:

* a variable in a role (``inside``, position 0 of its slot) is relevant when that role and
  position was relevant under some basis context;
* a variable in no role (the robot's pose, what it holds) is relevant when it was relevant,
  in no role, under some basis context.

The union over the basis is the conservative summary: a role any basis context needed is
kept everywhere. How close it comes to CSIs learned directly for a member is measured by
``test/domains/namo/test_role_relevance_audit.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.csi import ContextSymmetry, CSIResult
from camp_planner.core.errors import CampError
from camp_planner.core.mdp import FactoredMDP
from camp_planner.core.relevance import relevant_from_csis

Role = tuple[str, int]  # (role name, position in the slot)


def _roles_of(mdp: FactoredMDP, context: Context) -> dict[str, Role]:
    """Each variable's role under ``context`` (variables in no role are absent)."""
    if not isinstance(mdp, ContextSymmetry):
        raise CampError(f"{mdp.name} names no roles of its variables under a context")
    out: dict[str, Role] = {}
    roles: Mapping[str, Sequence[tuple[str, ...]]] = mdp.csi_context_roles(context)
    for role, slots in roles.items():
        for slot in slots:
            for position, variable in enumerate(slot):
                out[variable] = (role, position)
    return out


@dataclass(frozen=True)
class RoleRelevance:
    """The relevant roles and role-less variables of a context family (see the module)."""

    roles: frozenset[Role]
    free: frozenset[str]
    basis: int  # how many learned contexts it summarises

    @staticmethod
    def learn(mdp: FactoredMDP, results: Iterable[CSIResult]) -> RoleRelevance:
        """The summary of ``results`` (CSIs learned for the basis contexts), with roles as
        ``mdp`` (any task of the domain's variable layout) names them."""
        roles: set[Role] = set()
        free: set[str] = set()
        count = 0
        for result in results:
            if result.context.is_universal:
                continue
            of = _roles_of(mdp, result.context)
            if not of:
                raise CampError(
                    f"basis context {result.context.name} gives no variable a role: it is "
                    "not of the family role relevance summarises"
                )
            for variable in relevant_from_csis(result, mdp.reward_vars):
                if variable in of:
                    roles.add(of[variable])
                elif variable not in result.context.variables:
                    free.add(variable)
            count += 1
        if count == 0:
            raise CampError("role relevance needs the CSIs of at least one basis context")
        return RoleRelevance(frozenset(roles), frozenset(free), count)

    def relevant(self, mdp: FactoredMDP, context: Context) -> frozenset[str]:
        """The relevant variables of ``context`` (a concrete member of the family) in
        ``mdp``; the CAMP keeps the context's own variables besides."""
        of = _roles_of(mdp, context)
        if not of:
            raise CampError(f"context {context.name} gives no variable a role")
        names = {v.name for v in mdp.variables}
        return frozenset(
            v for v in names if (of[v] in self.roles if v in of else v in self.free)
        ) | (context.variables & names)

    def to_json(self) -> dict[str, Any]:
        return {
            "roles": sorted([list(r) for r in self.roles]),
            "free": sorted(self.free),
            "basis": self.basis,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> RoleRelevance:
        try:
            roles = frozenset((str(name), int(pos)) for name, pos in data["roles"])
            return RoleRelevance(roles, frozenset(map(str, data["free"])), int(data["basis"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CampError(f"malformed role relevance: {exc!r}") from exc
