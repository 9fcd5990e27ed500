"""Fast Downward (the real binary from the ``up-fast-downward`` wheel) behind the planner
interface, for STRIPS MDPs and CAMPs built over them.

``prepare`` writes the task as PDDL, runs the Fast Downward driver in a subprocess with the
configured search (default ``astar(lmcut())``, optimal with action costs) and the remaining
time of the planning call, and reads the plan back; ``act`` returns its steps. The full task
is given to the planner as its original lifted PDDL files when it has them (pure planning
then costs exactly what Fast Downward costs on the user's files); CAMPs go as the smaller
ground PDDL of :mod:`camp_planner.pddl.export`. If execution ever leaves the planned state
sequence, ``act`` replans from the state it is in.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError
from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import (
    Deadline,
    NoPlanFound,
    Planner,
    PlanningError,
    PlanningTimeout,
    Unsolvable,
)
from camp_planner.pddl.export import export, lifted_plan_names, strips_base

# The driver's documented exit codes (driver/returncodes.py).
_UNSOLVABLE = {10, 11, 12, 13}
# 21/23/24: out of time in translation/search; 232: a component killed by SIGXCPU (-24),
# the CPU-time limit the driver derives from --overall-time-limit (a budget of about a
# second leaves the translator less CPU time than it needs to start).
_OUT_OF_TIME = {21, 23, 24, 232}
_PLAN_FOUND = {0, 1, 2, 3}
_SEARCH_UNSUPPORTED = 34
# Translator arguments that keep every fact a binary variable. A delete effect whose fact the
# precondition does not require becomes, on a multi-valued variable, an effect conditioned on
# the variable's value, which LM-cut and most heuristics refuse; on a binary variable the
# translator drops that condition. Used only when the default translation was refused, so
# tasks that plan today keep their (more compact) translation and their plans.
_BINARY_VARIABLES = ("--invariant-generation-max-candidates", "0")


def driver_path() -> Path:
    """``fast-downward.py`` inside the installed wheel (the package itself is not imported:
    that needs unified-planning, the driver does not)."""
    spec = importlib.util.find_spec("up_fast_downward")
    if spec is None or spec.origin is None:
        raise CampError(
            "Fast Downward is not installed: `pip install up-fast-downward==1.0.0` "
            "(make setup does this)"
        )
    path = Path(spec.origin).parent / "downward" / "fast-downward.py"
    if not path.exists():
        raise CampError(f"the up-fast-downward wheel has no driver at {path}")
    return path


def _bin_dir() -> Path:
    return driver_path().parent / "builds" / "release" / "bin"


# The longest timeout handed to a blocking wait (``select``, ``Popen.communicate``) or to the
# driver's CPU-time limit. Those overflow beyond about 2**31 ms (``poll``: 24.8 days) or the
# platform's ``time_t``, and raise instead of waiting; a budget of more than eleven days is no
# limit for a planning call, so it is treated as none.
MAX_WAIT_S = 1e6


def wait_limit(budget: float) -> float | None:
    """``budget`` as a timeout for a blocking wait: ``None`` (as long as it takes) for an
    infinite, NaN or longer-than-:data:`MAX_WAIT_S` budget, else the budget (at least 0)."""
    if not budget <= MAX_WAIT_S:  # also true for NaN
        return None
    return max(budget, 0.0)


class _ResidentTranslator:
    """One long-lived translator process (see :mod:`fd_translator`), restarted when it dies
    or overruns a deadline (then it is killed: the translator cannot be interrupted).

    Every request carries an id that the reply echoes, and a reply to another request is
    never taken for this one's; and a call that fails between writing its request and
    reading its reply kills the helper, so no unread reply outlives the call."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.owner = os.getpid()
        self._sent = 0
        # Bytes read from the helper past the last complete reply. Read with ``os.read``, not
        # through a buffered file object: ``select`` only sees what is still in the pipe, so
        # a line buffered by Python would look like no reply at all.
        self._pending = b""

    def _start(self) -> subprocess.Popen[bytes]:
        if self.owner != os.getpid():
            # A forked worker must not share its parent's pipe: it gets its own helper.
            self.proc, self.owner, self._pending = None, os.getpid(), b""
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "camp_planner.planners.fd_translator", str(_bin_dir())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        return self.proc

    def translate(
        self, folder: Path, budget: float, options: Sequence[str] = ()
    ) -> tuple[int, str]:
        proc = self._start()
        assert proc.stdin is not None
        self._sent += 1
        request = {
            "id": self._sent,
            "domain": str(folder / "domain.pddl"),
            "problem": str(folder / "problem.pddl"),
            "sas": str(folder / "output.sas"),
            "options": list(options),
        }
        limit = wait_limit(budget)
        end = None if limit is None else time.monotonic() + limit
        try:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            reply = self._reply(proc, self._sent, end)
        except BaseException:
            # Whatever ended this call early (a timeout, a signal, a bug), the helper may
            # still answer it: killed, it cannot hand that answer to a later call.
            self.close()
            raise
        return int(reply["code"]), str(reply.get("log", ""))

    def _reply(
        self, proc: subprocess.Popen[bytes], request_id: int, end: float | None
    ) -> dict[str, Any]:
        """The helper's reply to request ``request_id``, skipping replies to earlier ones."""
        while True:
            line = self._line(proc, end)
            try:
                reply = json.loads(line)
            except ValueError as exc:
                raise PlanningError(
                    f"Fast Downward's resident translator sent a garbled reply: {line[:200]!r}"
                ) from exc
            if not isinstance(reply, dict) or not isinstance(reply.get("id"), int):
                raise PlanningError(
                    f"Fast Downward's resident translator sent a reply with no id: {line[:200]!r}"
                )
            if reply["id"] == request_id:
                return reply
            if reply["id"] > request_id:
                raise PlanningError(
                    f"Fast Downward's resident translator answered request {reply['id']}, "
                    f"which was never sent (waiting for {request_id})"
                )
            # The answer to an earlier request whose caller stopped waiting: not this one's.

    def _line(self, proc: subprocess.Popen[bytes], end: float | None) -> str:
        """The helper's next line of output, waiting until ``end`` (monotonic) at most."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._pending:
            timeout = None if end is None else max(end - time.monotonic(), 0.0)
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise PlanningTimeout("Fast Downward's translator exceeded the time budget")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise PlanningError("Fast Downward's resident translator exited unexpectedly")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace")

    def warm_up(self) -> None:
        """Start the helper and translate a one-fact task, so that the imports (≈0.1 s) are
        paid once at start-up, as a deployed planner would, not inside a timed call."""
        if self.owner == os.getpid() and self.proc is not None and self.proc.poll() is None:
            return
        with tempfile.TemporaryDirectory(prefix="camp-fd-warm-") as tmp:
            folder = Path(tmp)
            (folder / "domain.pddl").write_text(
                "(define (domain warm) (:requirements :strips) (:predicates (p))"
                " (:action a :parameters () :precondition () :effect (p)))"
            )
            (folder / "problem.pddl").write_text(
                "(define (problem warm) (:domain warm) (:init) (:goal (p)))"
            )
            self.translate(folder, 60.0)

    def close(self) -> None:
        proc, self.proc, self._pending = self.proc, None, b""
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


_RESIDENT = _ResidentTranslator()


class FastDownward(Planner):
    """Optimal classical planning with Fast Downward.

    Settings:
        search: the ``--search`` argument (default ``astar(lmcut())``, as in the paper).
        alias: a driver alias such as ``lama-first`` instead of ``search``.
        min_budget_s: never start Fast Downward with less than this time left.
        mode: ``driver`` runs ``fast-downward.py`` (a fresh translator process per call);
            ``resident`` keeps Fast Downward's translator imported in a helper process and
            runs the search binary directly: the same planner without ≈0.1 s of interpreter
            start-up per call.

    After :meth:`prepare`, ``last_stats`` holds the plan length and cost, the sizes of the
    PDDL given to the planner and the wall time split into writing and solving.
    """

    # 2: tasks whose translation the search refused are translated again with binary
    # variables (CHANGELOG.md).
    version = "2"

    name = "fast_downward"

    def __init__(
        self,
        seed: int = 0,
        search: str = "astar(lmcut())",
        alias: str | None = None,
        min_budget_s: float = 0.05,
        mode: str = "driver",
    ) -> None:
        super().__init__(seed)
        self.runner = FDRunner(search, alias, min_budget_s, mode)
        self.mode = mode
        self.search = search
        self.alias = alias
        self.min_budget_s = min_budget_s
        self._mdp: FactoredMDP | None = None
        self._plan: list[Action] = []
        self._expected: list[State] = []
        self._step = 0
        self.last_stats: dict[str, float | int | str] = {}

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        strips_base(mdp)  # a clear error for non-PDDL tasks, before any work
        self._mdp = mdp
        self._solve(mdp.initial_state(), deadline, lifted=True)

    def act(self, state: State, deadline: Deadline) -> Action:
        mdp = self._mdp
        if mdp is None:
            raise PlanningError("FastDownward.act called before prepare")
        if self._step >= len(self._plan) or self._expected[self._step] != state:
            self._solve(state, deadline, lifted=False)
        action = self._plan[self._step]
        self._step += 1
        return action

    def steps_to_go(self) -> int | None:
        # ``_step`` already points past the action the last ``act`` returned.
        return len(self._plan) - self._step + 1 if self._plan else None

    # --- running the planner ---------------------------------------------------------------
    def _solve(self, state: State, deadline: Deadline, lifted: bool) -> None:
        mdp = self._mdp
        assert mdp is not None
        base, camp = strips_base(mdp)
        t0 = time.perf_counter()
        # The user's own files whenever the task is planned unabstracted: pure planning, or a
        # universal CAMP that kept every fluent.
        whole = camp is None or (
            camp.context is not None
            and camp.context.is_universal
            and len(camp.keep_state) == len(base.state_vars)
        )
        use_lifted = lifted and whole and base.source is not None
        with tempfile.TemporaryDirectory(prefix="camp-fd-") as tmp:
            folder = Path(tmp)
            if use_lifted:
                assert base.source is not None
                domain_text, problem_text = base.source.domain_text, base.source.problem_text
                names: dict[str, str] | None = None
                sizes = {
                    "fluents": len(base.state_vars),
                    "operators": len(base.action_vars[0].domain or ()) - 1,
                }
            else:
                try:
                    exported = export(mdp, state)
                except CampError as exc:
                    # The CAMP admits no plan (its context is already violated, or nothing
                    # of the goal survives): a failed planning call, so fallbacks can run.
                    raise NoPlanFound(str(exc)) from exc
                domain_text, problem_text = exported.domain_text, exported.problem_text
                names = exported.action_names
                sizes = {"fluents": exported.n_fluents, "operators": exported.n_operators}
            (folder / "domain.pddl").write_text(domain_text)
            (folder / "problem.pddl").write_text(problem_text)
            written = time.perf_counter() - t0
            lines = self.runner.run(folder, deadline)
        plan_names = lifted_plan_names(lines)
        if names is not None:
            plan_names = [names[n.split("(")[0]] for n in plan_names]
        self._plan = [(n,) for n in plan_names]
        # The states the plan passes through, to notice when execution leaves them.
        self._expected = [state]
        for action in self._plan:
            self._expected.append(mdp.most_likely_next_state(self._expected[-1], action))
        if not mdp.is_goal(self._expected[-1]):
            # Possible only for contexts the export cannot compile into the operators (e.g.
            # disjunctions): the plan leaves the context, so there is no plan inside it.
            raise NoPlanFound("Fast Downward's plan leaves the CAMP's context")
        self._step = 0
        self.last_stats = {
            **sizes,
            "plan_length": len(self._plan),
            "plan_cost": sum(base.operator(str(a[0])).cost for a in self._plan),
            "write_s": written,
            "total_s": time.perf_counter() - t0,
            "input": "lifted" if use_lifted else "ground",
        }


class _ConditionalEffects(PlanningError):
    """The search refused the conditional effects the translator made of the task."""


class FDRunner:
    """Runs Fast Downward on PDDL text under a deadline and returns the plan's lines.

    Shared by the :class:`FastDownward` planner and by planners that generate their own PDDL
    (the TAMP planner's task layer)."""

    def __init__(
        self,
        search: str = "astar(lmcut())",
        alias: str | None = None,
        min_budget_s: float = 0.05,
        mode: str = "driver",
    ) -> None:
        if not search.strip() and alias is None:
            raise ValueError("give a search configuration or an alias")
        if mode not in ("driver", "resident"):
            raise ValueError(f"mode must be 'driver' or 'resident', got {mode!r}")
        if mode == "resident" and alias is not None:
            raise ValueError("aliases need the driver: use mode 'driver' or give a search")
        self.search = search
        self.alias = alias
        self.min_budget_s = min_budget_s
        self.mode = mode
        if mode == "resident":
            _RESIDENT.warm_up()

    def solve(self, domain_text: str, problem_text: str, deadline: Deadline) -> list[str]:
        """The plan's lines (``(action arg ...)``) for the given PDDL; raises
        :class:`NoPlanFound`, :class:`PlanningTimeout` or :class:`PlanningError`."""
        with tempfile.TemporaryDirectory(prefix="camp-fd-") as tmp:
            folder = Path(tmp)
            (folder / "domain.pddl").write_text(domain_text)
            (folder / "problem.pddl").write_text(problem_text)
            return self.run(folder, deadline)

    def run(self, folder: Path, deadline: Deadline) -> list[str]:
        """Plan for ``domain.pddl`` and ``problem.pddl`` already written in ``folder``."""
        attempt = self._run_resident if self.mode == "resident" else self._run
        try:
            return attempt(folder, deadline, ())
        except _ConditionalEffects:
            (folder / "plan.txt").unlink(missing_ok=True)
            return attempt(folder, deadline, _BINARY_VARIABLES)

    def _budget(self, deadline: Deadline) -> float:
        """The seconds left for this call, or a timeout if too few remain to start."""
        budget = deadline.remaining
        if budget < self.min_budget_s:
            raise PlanningTimeout("no time left to start Fast Downward")
        return budget

    def _run_resident(
        self, folder: Path, deadline: Deadline, translate: Sequence[str]
    ) -> list[str]:
        budget = self._budget(deadline)
        code, log = _RESIDENT.translate(folder, budget, translate)
        if code != 0:
            self._check_code(code, deadline, log)
        budget = deadline.remaining
        if budget <= 0:
            raise PlanningTimeout("Fast Downward's translator used the whole budget")
        search = str(_bin_dir() / "downward")
        limit = wait_limit(budget)
        try:
            with (folder / "output.sas").open() as sas:
                proc = subprocess.run(
                    [search, "--search", self.search, "--internal-plan-file", "plan.txt"],
                    stdin=sas,
                    cwd=folder,
                    capture_output=True,
                    text=True,
                    timeout=limit,
                    check=False,
                )
        except subprocess.TimeoutExpired as exc:
            raise PlanningTimeout(f"Fast Downward exceeded the {budget:.3g} s budget") from exc
        return self._plan_lines(folder, proc, deadline)

    def _check_code(self, code: int, deadline: Deadline, log: str) -> None:
        if code in _UNSOLVABLE:
            raise Unsolvable("Fast Downward proved the task unsolvable")
        if code in _OUT_OF_TIME or deadline.expired():
            raise PlanningTimeout(f"Fast Downward ran out of time (exit code {code})")
        if code not in _PLAN_FOUND:
            tail = log.strip().splitlines()[-3:]
            kind = PlanningError
            if code == _SEARCH_UNSUPPORTED and "conditional effects" in log:
                kind = _ConditionalEffects
            raise kind(f"Fast Downward failed (exit code {code}): {' | '.join(tail)}")

    def _plan_lines(
        self, folder: Path, proc: subprocess.CompletedProcess[str], deadline: Deadline
    ) -> list[str]:
        self._check_code(proc.returncode, deadline, proc.stderr or proc.stdout)
        plan_file = folder / "plan.txt"
        if not plan_file.exists():
            raise PlanningError(f"Fast Downward wrote no plan (exit code {proc.returncode})")
        return plan_file.read_text().splitlines()

    def _run(self, folder: Path, deadline: Deadline, translate: Sequence[str]) -> list[str]:
        budget = self._budget(deadline)
        cmd = [sys.executable, str(driver_path())]
        limit = wait_limit(budget)
        if limit is not None:
            # The driver's own limit lets it stop cleanly; the subprocess timeout is the
            # backstop in case it does not.
            cmd += ["--overall-time-limit", f"{max(1, math.ceil(limit))}s"]
        if self.alias:
            cmd += ["--alias", self.alias]
        cmd += ["--plan-file", "plan.txt", "domain.pddl", "problem.pddl"]
        if translate:
            cmd += ["--translate-options", *translate, "--search-options"]
        if not self.alias:
            cmd += ["--search", self.search]
        try:
            proc = subprocess.run(
                cmd,
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=None if limit is None else limit + 0.5,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise PlanningTimeout(f"Fast Downward exceeded the {budget:.3g} s budget") from exc
        return self._plan_lines(folder, proc, deadline)
