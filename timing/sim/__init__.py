"""The discrete-event simulation behind `timing.simulate` (engine, scenarios, specs)."""
