"""The results contract: schemas, rules and the strict readers of every kind of results file."""
