"""`lockstep fix`: the nearest numbers that satisfy every rule, found by a solver.

`translate` turns a finding's relation — the `timing.expr` trees its two terms were computed
by — into a solver constraint; `solve` collects the constraints of every finding over the
stack, the fields' ranges and the objective; `patch` writes the answer back into the stack's
YAML file keeping everything else as it was. No rule is restated here: the constraints are
the findings' own expressions. Needs the `fix` extra (z3-solver, ruamel.yaml).
"""
