"""A row of BENCHMARKS.md's tables, shared by update_benchmarks.py and gpu_results.py."""


def ratio_row(name, value, target, what):
    """A ratio whose target is a lower bound (value >= target)."""
    met = value >= target
    return {"metric": name, "value": value, "target": f">= {target}", "met": met, "what": what}
