# %% [markdown]
# # Glossary
#
# One name for each idea, used the same way on every page and in every chart. The *ridge batch*
# is always computed (a prediction from ceilings, or a fit to a curve's own rates) and the
# *measured knee* always a measurement.

# %% tags=["hide-input"]
from benchmarks.site.pages import glossary

glossary.build().show("terms")
