"""Learning to select contexts: label scoring, the torch selector, bundles, baselines.

Kept light: importing this package does not import torch (the CLI lists method names
without paying for it)."""

METHOD_NAMES = (
    "camp",
    "camp_ablation",
    "pure",
    "plan_transfer",
    "policy",
    "task_policy",
    "oracle",
)
