"""Learning to select contexts: label scoring, the torch selector, bundles, baselines."""
