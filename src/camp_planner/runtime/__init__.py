"""The CAMP runtime: the one place a CAMP run happens (selection, relevance, CAMP
construction, planning with fallbacks and budgets), behind every entry point."""
