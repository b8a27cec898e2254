"""Analytic predictions: deterministic (never a random number), scipy for speed, mpmath for precision.

One flat namespace, one block per topic; the modules behind it are private.
Conventions: docs/conventions.md §1; signatures: docs/api.md.
"""
from __future__ import annotations

# --- classical: activations, Hermite expansions, targets, Marchenko-Pastur, Tracy-Widom, BGN outliers
from ._classical.activations import Activation, get_activation, hermite_polynomial, known_activations
from ._classical.hermite import (
    dual_activation,
    gaussian_moment,
    hermite_coeff,
    hermite_coeff_normalised,
    hermite_coeffs,
    hermite_coeffs_mp,
    hermite_he,
    information_exponent,
    nonlinear_norm,
    stein_moment,
)
from ._classical.targets import make_target, Target
from ._classical.mp import (
    MPEdges,
    mp_atom,
    mp_cdf,
    mp_density,
    mp_edges,
    mp_moment,
    mp_moments,
    mp_quantile,
    mp_stieltjes,
    mp_sv_atom,
    mp_sv_cdf,
    mp_sv_density,
    mp_sv_edges,
)
from ._classical.tracy_widom import (
    edge_margin,
    EdgeScaling,
    largest_sv_scaling,
    tracy_widom_cdf,
    tracy_widom_mean,
    tracy_widom_pdf,
    tracy_widom_quantile,
)
from ._classical.edge_count import edge_outlier_count, EdgeCount
from ._classical.bgn import (
    bgn_dtransform,
    bgn_outlier,
    bgn_threshold,
    BGNOutlier,
    dtransform_threshold,
    DTransformBulk,
)
from ._classical.ck import ck_moments_noncrossing, ck_spectrum, CKOutlier, CKSpectrum
from ._classical.bgn_inverse import bgn_inverse, bgn_outlier_sd, BGNInverse
from ._classical.spiked_covariance import (
    spiked_covariance_inverse,
    spiked_covariance_outlier,
    spiked_covariance_sd,
    SpikedCovarianceInverse,
    SpikedCovarianceOutlier,
)

# --- two_step: one and two large gradient steps, outlier counts, phase diagrams (docs/theory/two_step.md)
from ._two_step.one_step import one_step, OneStepPrediction
from ._two_step.outliers import CountResult, one_step_spike_count, outlier_count, phase_boundary, step_size
from ._two_step.phase import finite_n_outlier_map, FiniteNMap, phase_diagram, PhaseDiagram
from ._two_step.two_step import two_step, two_step_finite_n, TwoStepOutlier, TwoStepPrediction
from ._two_step.bulk_edge import two_step_bulk_edge
from ._two_step.ck_spikes import ck_one_step_spikes, CKStepSpike, CKStepSpikes

# --- spiked_kernel: random-features kernels, sphere spectra, the zonal problem (docs/theory/spiked_kernel.md)
from ._spiked_kernel.gamma import as_gamma, SpikedGamma
from ._spiked_kernel.closed_forms import arccos_kernel
from ._spiked_kernel.mehler import kernel_truncation_error, mehler_coefficients, MehlerCoefficients
from ._spiked_kernel.rf_kernel import gram_block, kernel_from_scalars, rf_kernel, rf_kernel_error
from ._spiked_kernel.spike_derivative import dk_dB, dk_dB_relu
from ._spiked_kernel.sphere import (
    funk_hecke,
    gegenbauer_P,
    harmonic_multiplicity,
    linear_sector,
    LinearSector,
    sphere_eigenvalues,
    SphereSpectrum,
    zonal_harmonic,
)
from ._spiked_kernel.spike import b_from_eta, eta_from_b, spike_constants, SpikeConstants
from ._spiked_kernel.gram import GramOutlier, kernel_gram_spectrum, KernelGramSpectrum
from ._spiked_kernel.zonal import (
    first_order_mixing,
    MixingCoefficient,
    zonal_limit_operator,
    zonal_operator,
    zonal_top_eigenfunction,
    ZonalEigen,
    ZonalOperator,
)

# --- gradient_flow: homogeneous networks, NCF KKT points, escape, the first saddle (docs/theory/gradient_flow.md)
from ._gradient_flow.networks import (
    FeedForward,
    homogeneity_degree,
    QuadraticModel,
    TwoLayer,
    zero_preserving,
    ZeroPreservingSet,
)
from ._gradient_flow.problem import ebar, FlowProblem, make_problem
from ._gradient_flow.kkt import KKTPoint, KKTResult, KKTSearchError, ncf_kkt
from ._gradient_flow.escape import escape_time, EscapePrediction
from ._gradient_flow.saddle import first_saddle, FirstSaddle, limiting_path, LimitingPath, SaddleSearchError
from ._gradient_flow.examples import FLOW_EXAMPLES, flow_example, FlowExample


__all__ = [
    "Activation", "get_activation", "hermite_polynomial", "known_activations", "dual_activation",
    "gaussian_moment", "hermite_coeff", "hermite_coeff_normalised", "hermite_coeffs", "hermite_coeffs_mp", "hermite_he",
    "information_exponent", "nonlinear_norm", "stein_moment", "make_target", "Target", "mp_atom", "mp_cdf",
    "mp_density", "mp_edges", "mp_moment", "mp_moments", "mp_quantile", "mp_stieltjes", "mp_sv_atom",
    "mp_sv_cdf", "mp_sv_density", "mp_sv_edges", "MPEdges", "edge_margin", "EdgeScaling", "largest_sv_scaling",
    "tracy_widom_cdf",
    "tracy_widom_mean", "tracy_widom_pdf", "tracy_widom_quantile", "edge_outlier_count", "EdgeCount", "bgn_dtransform", "bgn_outlier",
    "bgn_threshold", "BGNOutlier", "dtransform_threshold", "DTransformBulk",
    "ck_moments_noncrossing", "ck_spectrum", "CKOutlier", "CKSpectrum", "bgn_inverse", "bgn_outlier_sd",
    "BGNInverse", "spiked_covariance_inverse", "spiked_covariance_outlier", "spiked_covariance_sd",
    "SpikedCovarianceInverse", "SpikedCovarianceOutlier", "one_step", "OneStepPrediction",
    "CountResult", "one_step_spike_count", "outlier_count", "phase_boundary", "step_size",
    "finite_n_outlier_map", "FiniteNMap", "phase_diagram", "PhaseDiagram", "two_step", "two_step_finite_n", "TwoStepOutlier",
    "TwoStepPrediction", "two_step_bulk_edge", "ck_one_step_spikes", "CKStepSpike", "CKStepSpikes",
    # spiked_kernel
    "arccos_kernel", "as_gamma", "dk_dB", "dk_dB_relu", "gram_block", "kernel_from_scalars",
    "kernel_truncation_error", "mehler_coefficients", "MehlerCoefficients", "rf_kernel", "rf_kernel_error",
    "SpikedGamma", "funk_hecke", "gegenbauer_P", "harmonic_multiplicity", "linear_sector", "LinearSector",
    "sphere_eigenvalues", "SphereSpectrum", "zonal_harmonic", "b_from_eta", "eta_from_b", "spike_constants",
    "SpikeConstants", "first_order_mixing", "MixingCoefficient",
    "GramOutlier", "kernel_gram_spectrum", "KernelGramSpectrum",
    "zonal_limit_operator", "zonal_operator", "zonal_top_eigenfunction", "ZonalEigen", "ZonalOperator",
    # gradient_flow
    "FeedForward", "homogeneity_degree", "QuadraticModel",
    "TwoLayer", "zero_preserving", "ebar", "FlowProblem", "make_problem", "KKTPoint", "KKTResult",
    "KKTSearchError", "ncf_kkt", "escape_time", "EscapePrediction", "first_saddle", "FirstSaddle",
    "limiting_path", "LimitingPath", "SaddleSearchError", "FLOW_EXAMPLES", "flow_example", "FlowExample",
    "ZeroPreservingSet",
]
