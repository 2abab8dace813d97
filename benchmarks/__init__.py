"""Measure how latency grows with batch size, and explain it with the roofline model.

Modules here are pure Python (schema, results, roofline, datasheet, profiles, stats) except
`benchmarks.measure`, the only package that imports torch.
"""
