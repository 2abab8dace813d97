# %% [markdown]
# # Glossary
#
# One name for each idea, used the same way on every page and in every chart. The *ridge batch*
# is always a prediction and the *measured knee* always a measurement.

# %% tags=["hide-input"]
from benchmarks.site.pages import glossary

glossary.build().show("terms")
