"""The war-logs case study ([FGWC16] §5): synthetic records with the published structure.

* :mod:`pymc_dp.examples.warlogs.data`: the generator (Iraq- and Afghanistan-like
  presets), a CSV loader for a user's own records, and the per-cell feature counts
  ``n[r, t, d, j]`` that the models use.

The hidden Markov model, its private routes and the ``pymc-dp demo`` report are being
built on top of this module.
"""
