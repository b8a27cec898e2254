"""Plotting functions: each takes ``ax=None``, returns the Axes and never calls ``plt.show()``.

One flat namespace, one block per topic; the modules behind it are private.  Importing this
package imports matplotlib (``import rmtfl`` alone does not).  Figures written by
:func:`rmtfl.compare.save_figure` carry a JSON sidecar of their parameters and versions.
"""
from __future__ import annotations

# --- classical: Marchenko-Pastur histograms and the BBP transition
from ._classical import plot_bbp_outlier, plot_bbp_overlaps, plot_mp_histogram

# --- two_step: spectra of W1/W2, alignment against the step size, phase maps
from ._two_step import plot_alignment_vs_eta, plot_phase_map, plot_phase_pair, plot_spectrum

# --- spiked_kernel: degree spectra, Y2 alignment, test error
from ._spiked_kernel import plot_degree_spectrum, plot_test_error, plot_y2_alignment

# --- gradient_flow: loss collapse, unit norms, escape times
from ._gradient_flow import plot_escape_times, plot_loss_collapse, plot_unit_norms, plot_weight_heatmap

# --- classical: conjugate-kernel spectra (docs/theory/kernel_spectra.md)
from ._kernel_spectra import plot_ck_spectrum

# --- analyze: the ESD of a user's matrix with the fitted MP law and its outliers (docs/analyze.md)
from ._analyze import plot_spectrum_report

# --- sweep: empirical count maps beside the phase boundaries
from ._sweep import cell_edges, plot_count_map, plot_phase_boundaries

__all__ = [
    "plot_bbp_outlier", "plot_bbp_overlaps", "plot_mp_histogram",
    "plot_alignment_vs_eta", "plot_phase_map", "plot_phase_pair", "plot_spectrum",
    "plot_degree_spectrum", "plot_test_error", "plot_y2_alignment",
    "plot_escape_times", "plot_loss_collapse", "plot_unit_norms", "plot_weight_heatmap",
    "cell_edges", "plot_count_map", "plot_phase_boundaries",
    "plot_ck_spectrum",
    "plot_spectrum_report",
]
