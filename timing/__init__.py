"""lockstep's pure core: the timing model, its invariants, timelines, extraction and CLI.

Never imports pulumi, boto or kubernetes: it is what the policy pack, the audit and the
Pulumi program share, and it must stay fast to import.
"""
