"""Entry point of `pulumi up` / `pulumi preview` (`main: infra/` in Pulumi.yaml).

Nothing runs at import time of the `infra` package itself: the program lives in
`infra.program`, which tests and `lockstep render` run under Pulumi's mocks.
"""

from lockstep.infra.program import main

main()
