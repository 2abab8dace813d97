"""Workloads exactly as the site shows them: one small runnable file each."""
