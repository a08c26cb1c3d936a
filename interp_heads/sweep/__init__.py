"""The ablation sweep: the plan of conditions, the one run loop, checks and statistics."""
