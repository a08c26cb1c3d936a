"""What masking a head means: ablation kinds (registered), masks on hook_z, per-row masks."""
