"""Plotting functions: each takes ``ax=None``, returns the Axes and never calls ``plt.show()``.

One module per part (``rmtfl.plots.<part>``); import them directly.
"""
