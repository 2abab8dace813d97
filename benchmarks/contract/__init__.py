"""The results contract: the JSON Schemas of results and sweep files, the rules a schema cannot say,
and the one strict reader and atomic writer every other layer goes through. Pure Python, no torch."""
