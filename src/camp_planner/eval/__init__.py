"""The paper's comparison, apart from the runtime: the methods it compares (the CAMP methods
call :mod:`camp_planner.runtime`), test episodes on any executor, the evaluation harness
with paired statistics, and the λ and training-size sweeps."""
