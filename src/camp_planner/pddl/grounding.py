"""Ground a parsed PDDL domain and problem into a STRIPS task over indexed fluents.

Grounding explores the delete relaxation from the initial state, Datalog style: a schema is
instantiated only when a newly reached fact completes a match of its positive preconditions
against the facts reached so far, so parameters are bound by joins over known facts (static
ones included) instead of a cartesian product over all objects. What survives is exactly the
set of relaxed-reachable operators and fluents. Static predicates (never in an effect) are
decided against the initial state here and do not become fluents.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product

from camp_planner.core.errors import CampError
from camp_planner.pddl.parser import (
    OBJECT,
    ActionDef,
    Atom,
    DomainDef,
    FunctionTerm,
    ProblemDef,
    check_problem,
)

# A ground atom: predicate and object names.
Fact = tuple[str, tuple[str, ...]]
Binding = dict[str, str]


@dataclass(frozen=True)
class GroundOperator:
    """A ground action; the frozensets hold indices into :attr:`GroundTask.fluents`.

    ``cost`` is its cost under the problem's metric: the action cost when the problem says
    ``(:metric minimize (total-cost))``, otherwise 1, so that plan length is minimised.
    """

    name: str
    schema: str
    args: tuple[str, ...]
    pre_pos: frozenset[int]
    pre_neg: frozenset[int]
    add: frozenset[int]
    delete: frozenset[int]
    cost: float


@dataclass(frozen=True)
class GroundTask:
    """A STRIPS task: sorted fluent names, sorted operators, initial state and goal."""

    fluents: tuple[str, ...]
    operators: tuple[GroundOperator, ...]
    init: frozenset[int]
    goal_pos: frozenset[int]
    goal_neg: frozenset[int]
    objects: dict[str, str]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {f: i for i, f in enumerate(self.fluents)})

    def fluent_index(self, atom: str) -> int:
        """The index of a fluent written like ``at(robot,kitchen)`` or ``handempty()``."""
        try:
            return self._index[atom]
        except KeyError:
            raise CampError(f"unknown fluent {atom} (static, unreachable or misspelt)") from None


def applicable(op: GroundOperator, state: frozenset[int]) -> bool:
    """Whether ``op``'s preconditions hold in ``state`` (the set of true fluent indices)."""
    return op.pre_pos <= state and not (op.pre_neg & state)


def apply(op: GroundOperator, state: frozenset[int]) -> frozenset[int]:
    """The successor under STRIPS semantics: deletes first, so an atom both added and
    deleted ends up true."""
    return (state - op.delete) | op.add


def is_goal(task: GroundTask, state: frozenset[int]) -> bool:
    return task.goal_pos <= state and not (task.goal_neg & state)


def fact_name(fact: Fact) -> str:
    return f"{fact[0]}({','.join(fact[1])})"


def _instantiate(atom: Atom, binding: Mapping[str, str]) -> Fact:
    # Constants are not in the binding and stand for themselves.
    return atom.predicate, tuple(binding.get(a, a) for a in atom.args)


@dataclass(frozen=True)
class _Schema:
    number: int
    action: ActionDef
    static_pos: tuple[Atom, ...]
    fluent_pos: tuple[Atom, ...]
    static_neg: tuple[Atom, ...]
    fluent_neg: tuple[Atom, ...]
    param_types: dict[str, str]


class _FactIndex:
    """Reached facts, looked up by predicate and by (predicate, position, object)."""

    def __init__(self) -> None:
        self._all: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        self._by_arg: dict[tuple[str, int, str], list[tuple[str, ...]]] = defaultdict(list)

    def add(self, fact: Fact) -> None:
        predicate, args = fact
        self._all[predicate].append(args)
        for i, arg in enumerate(args):
            self._by_arg[predicate, i, arg].append(args)

    def candidates(self, atom: Atom, binding: Mapping[str, str]) -> list[tuple[str, ...]]:
        """A superset of the facts matching ``atom`` under ``binding``, as small as the
        single-argument indexes allow."""
        best = self._all.get(atom.predicate, [])
        for i, term in enumerate(atom.args):
            value = binding.get(term) if term.startswith("?") else term
            if value is not None:
                narrowed = self._by_arg.get((atom.predicate, i, value), [])
                if len(narrowed) < len(best):
                    best = narrowed
        return best


class _Explorer:
    """The relaxed-reachability fixpoint that finds operators and reachable fluents."""

    def __init__(
        self, schemas: Sequence[_Schema], members: Mapping[str, frozenset[str]], static: set[Fact]
    ) -> None:
        self.schemas = schemas
        self.members = members
        self.sorted_members = {t: tuple(sorted(objs)) for t, objs in members.items()}
        self.static = static
        self.index = _FactIndex()
        for fact in static:
            self.index.add(fact)
        self.reached: set[Fact] = set()
        self.queue: deque[Fact] = deque()
        self.seen: set[tuple[int, tuple[str, ...]]] = set()
        self.found: list[tuple[_Schema, Binding]] = []
        self.triggers: dict[str, list[tuple[_Schema, int]]] = defaultdict(list)
        for schema in schemas:
            for i, atom in enumerate(schema.fluent_pos):
                self.triggers[atom.predicate].append((schema, i))

    def run(self, init_fluents: Iterable[Fact]) -> None:
        for fact in init_fluents:
            self._reach(fact)
        for schema in self.schemas:
            if not schema.fluent_pos:
                for binding in self._join(schema, list(schema.static_pos), {}):
                    self._emit(schema, binding)
        # Semi-naive evaluation: a fact joins only once it is indexed, so an operator is found
        # when the last of its preconditions is processed, against all the earlier ones.
        while self.queue:
            fact = self.queue.popleft()
            self.index.add(fact)
            for schema, i in self.triggers.get(fact[0], ()):
                start = self._match(schema, schema.fluent_pos[i], fact[1], {})
                if start is None:
                    continue
                rest = [*schema.static_pos, *schema.fluent_pos[:i], *schema.fluent_pos[i + 1 :]]
                for full in self._join(schema, rest, start):
                    self._emit(schema, full)

    def _reach(self, fact: Fact) -> None:
        if fact not in self.reached:
            self.reached.add(fact)
            self.queue.append(fact)

    def _match(
        self, schema: _Schema, atom: Atom, args: tuple[str, ...], binding: Binding
    ) -> Binding | None:
        extended = dict(binding)
        for term, value in zip(atom.args, args, strict=True):
            if not term.startswith("?"):
                if term != value:
                    return None
                continue
            bound = extended.get(term)
            if bound is None:
                # Facts may mention objects of a wider type than the parameter admits.
                if value not in self.members[schema.param_types[term]]:
                    return None
                extended[term] = value
            elif bound != value:
                return None
        return extended

    def _join(self, schema: _Schema, atoms: list[Atom], binding: Binding) -> Iterator[Binding]:
        if not atoms:
            yield binding
            return
        # The most constrained atom first keeps partial assignments few.
        options = [self.index.candidates(atom, binding) for atom in atoms]
        best = min(range(len(atoms)), key=lambda k: len(options[k]))
        rest = atoms[:best] + atoms[best + 1 :]
        for args in options[best]:
            extended = self._match(schema, atoms[best], args, binding)
            if extended is not None:
                yield from self._join(schema, rest, extended)

    def _emit(self, schema: _Schema, binding: Binding) -> None:
        params = schema.action.parameters
        free = [p for p in params if p.name not in binding]
        for values in product(*(self.sorted_members[p.type] for p in free)):
            full = binding | {p.name: v for p, v in zip(free, values, strict=True)}
            key = (schema.number, tuple(full[p.name] for p in params))
            if key in self.seen:
                continue
            self.seen.add(key)
            if not self._admits(schema, full):
                continue
            self.found.append((schema, full))
            for atom in schema.action.add:
                self._reach(_instantiate(atom, full))

    def _admits(self, schema: _Schema, binding: Binding) -> bool:
        for eq in schema.action.equalities:
            same = binding.get(eq.left, eq.left) == binding.get(eq.right, eq.right)
            if same != eq.positive:
                return False
        return all(_instantiate(a, binding) not in self.static for a in schema.static_neg)


def _members_by_type(domain: DomainDef, objects: Mapping[str, str]) -> dict[str, frozenset[str]]:
    members: dict[str, set[str]] = {t: set() for t in (OBJECT, *domain.types)}
    for obj, type_name in objects.items():
        current = type_name
        while True:
            members[current].add(obj)
            if current == OBJECT:
                break
            current = domain.types[current]
    return {t: frozenset(objs) for t, objs in members.items()}


def _cost(action: ActionDef, binding: Binding, problem: ProblemDef, op_name: str) -> float:
    """The operator's cost under the problem's metric: its action cost with
    ``(:metric minimize (total-cost))``, else 1 (plan length).

    This is what Fast Downward optimises on the user's own files (without a metric it ignores
    action costs), so the MDP's return, the exported CAMPs and the lifted full task all agree
    on one objective. The action costs are checked either way, so a broken cost is refused
    whether or not the metric uses it.
    """
    amount = action.cost
    if amount is None:
        value = 0.0
    elif isinstance(amount, FunctionTerm):
        term = FunctionTerm(amount.name, tuple(binding.get(a, a) for a in amount.args))
        found = problem.function_values.get(term)
        if found is None:
            raise CampError(
                f"{problem.source}: no value for {term} in :init (the cost of {op_name})"
            )
        if found < 0:
            raise CampError(f"{problem.source}: negative cost {term} = {found} of {op_name}")
        value = found
    else:
        value = amount
    return value if problem.minimize_total_cost else 1.0


def ground(domain: DomainDef, problem: ProblemDef) -> GroundTask:
    """Ground ``problem`` over ``domain`` into its relaxed-reachable STRIPS task."""
    check_problem(domain, problem)
    objects = {c.name: c.type for c in domain.constants}
    objects.update({o.name: o.type for o in problem.objects})
    members = _members_by_type(domain, objects)
    changing = {a.predicate for action in domain.actions for a in (*action.add, *action.delete)}
    init_facts = {(a.predicate, a.args) for a in problem.init}
    static = {f for f in init_facts if f[0] not in changing}

    schemas = []
    for number, action in enumerate(domain.actions):
        pos = [lit.atom for lit in action.precondition if lit.positive]
        neg = [lit.atom for lit in action.precondition if not lit.positive]
        schemas.append(
            _Schema(
                number=number,
                action=action,
                static_pos=tuple(a for a in pos if a.predicate not in changing),
                fluent_pos=tuple(a for a in pos if a.predicate in changing),
                static_neg=tuple(a for a in neg if a.predicate not in changing),
                fluent_neg=tuple(a for a in neg if a.predicate in changing),
                param_types={p.name: p.type for p in action.parameters},
            )
        )
    explorer = _Explorer(schemas, members, static)
    init_true = {f for f in init_facts if f[0] in changing}
    explorer.run(sorted(init_true))
    reached = explorer.reached

    fluent_facts = set(reached)
    goal_pos: list[Fact] = []
    goal_neg: list[Fact] = []
    for literal in problem.goal:
        fact = (literal.atom.predicate, literal.atom.args)
        if fact[0] in changing:
            fluent_facts.add(fact)
            (goal_pos if literal.positive else goal_neg).append(fact)
        elif (fact in static) != literal.positive:
            # A static goal the initial state violates: keep it so the task stays unsolvable.
            fluent_facts.add(fact)
            if literal.positive:
                goal_pos.append(fact)
            else:
                goal_neg.append(fact)
                init_true.add(fact)

    order = sorted(fluent_facts, key=fact_name)
    index = {fact: i for i, fact in enumerate(order)}
    operators = []
    for schema, binding in explorer.found:
        action = schema.action
        args = tuple(binding[p.name] for p in action.parameters)
        name = f"{action.name}({','.join(args)})"
        negs = (_instantiate(a, binding) for a in schema.fluent_neg)
        dels = (_instantiate(a, binding) for a in action.delete)
        operators.append(
            GroundOperator(
                name=name,
                schema=action.name,
                args=args,
                pre_pos=frozenset(index[_instantiate(a, binding)] for a in schema.fluent_pos),
                # Never-reachable atoms are always false: such a precondition always holds.
                pre_neg=frozenset(index[f] for f in negs if f in reached),
                add=frozenset(index[_instantiate(a, binding)] for a in action.add),
                delete=frozenset(index[f] for f in dels if f in index),
                cost=_cost(action, binding, problem, name),
            )
        )
    operators.sort(key=lambda op: op.name)
    return GroundTask(
        fluents=tuple(fact_name(f) for f in order),
        operators=tuple(operators),
        init=frozenset(index[f] for f in init_true),
        goal_pos=frozenset(index[f] for f in goal_pos),
        goal_neg=frozenset(index[f] for f in goal_neg),
        objects=objects,
    )


def on_layout(task: GroundTask, fluents: tuple[str, ...]) -> GroundTask:
    """``task`` re-indexed onto a larger, shared fluent list (e.g. the union over several
    problems of one domain), so their MDPs share one variable layout; fluents the task never
    mentions are simply always false."""
    index = {f: i for i, f in enumerate(fluents)}
    missing = [f for f in task.fluents if f not in index]
    if missing:
        raise CampError(f"fluent {missing[0]} is not in the shared layout")
    move = [index[f] for f in task.fluents]

    def remap(ids: frozenset[int]) -> frozenset[int]:
        return frozenset(move[i] for i in ids)

    operators = tuple(
        GroundOperator(
            op.name,
            op.schema,
            op.args,
            remap(op.pre_pos),
            remap(op.pre_neg),
            remap(op.add),
            remap(op.delete),
            op.cost,
        )
        for op in task.operators
    )
    return GroundTask(
        fluents,
        operators,
        remap(task.init),
        remap(task.goal_pos),
        remap(task.goal_neg),
        dict(task.objects),
    )
