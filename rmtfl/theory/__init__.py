"""Analytic predictions (scipy for speed, mpmath for precision; never a random number)."""
from .activations import Activation, get_activation, hermite_polynomial, known_activations
from .hermite import (
    dual_activation,
    gaussian_moment,
    hermite_coeff,
    hermite_coeff_normalised,
    hermite_coeffs,
    hermite_he,
    information_exponent,
    nonlinear_norm,
    stein_moment,
)

__all__ = [
    "Activation", "get_activation", "hermite_polynomial", "known_activations",
    "dual_activation", "gaussian_moment", "hermite_coeff", "hermite_coeff_normalised",
    "hermite_coeffs", "hermite_he", "information_exponent", "nonlinear_norm", "stein_moment",
]

# two-step part (issue 3): targets
from .targets import Target, make_target  # noqa: E402

__all__ += ["Target", "make_target"]

# classical part (issue 2): Marchenko–Pastur and Tracy–Widom
from .mp import (  # noqa: E402
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
from .tracy_widom import (  # noqa: E402
    edge_margin,
    largest_sv_scaling,
    tracy_widom_cdf,
    tracy_widom_mean,
    tracy_widom_pdf,
    tracy_widom_quantile,
)

__all__ += ["mp_atom", "mp_cdf", "mp_density", "mp_edges", "mp_moment", "mp_moments", "mp_quantile",
            "mp_stieltjes", "mp_sv_atom", "mp_sv_cdf", "mp_sv_density", "mp_sv_edges",
            "edge_margin", "largest_sv_scaling", "tracy_widom_cdf", "tracy_widom_mean",
            "tracy_widom_pdf", "tracy_widom_quantile"]
from .bgn import (  # noqa: E402
    BGNOutlier,
    DTransformBulk,
    bgn_dtransform,
    bgn_outlier,
    bgn_threshold,
    dtransform_threshold,
)

__all__ += ["BGNOutlier", "DTransformBulk", "bgn_dtransform", "bgn_outlier", "bgn_threshold",
            "dtransform_threshold"]

# gradient-flow part (issue 5): homogeneous networks, NCF KKT points, escape, limiting path
from .networks import (  # noqa: E402
    FeedForward,
    QuadraticModel,
    TwoLayer,
    homogeneity_degree,
    zero_preserving,
)
from .flow_problem import FlowProblem, ebar, make_problem  # noqa: E402
from .kkt import KKTResult, KKTSearchError, ncf_kkt  # noqa: E402
from .escape import EscapePrediction, escape_time  # noqa: E402
from .saddle import FirstSaddle, LimitingPath, SaddleSearchError, first_saddle, limiting_path  # noqa: E402

__all__ += ["FeedForward", "FlowProblem", "QuadraticModel", "TwoLayer", "ebar", "homogeneity_degree",
            "make_problem", "zero_preserving", "KKTResult", "KKTSearchError", "ncf_kkt",
            "EscapePrediction", "escape_time", "FirstSaddle", "LimitingPath", "SaddleSearchError",
            "first_saddle", "limiting_path"]

# two-step part (issue 3): one and two large gradient steps
from .one_step import OneStepPrediction, one_step  # noqa: E402
from .outliers import CountResult, one_step_spike_count, outlier_count, phase_boundary, step_size  # noqa: E402
from .phase import PhaseDiagram, finite_n_outlier_map, phase_diagram  # noqa: E402
from .two_step import TwoStepOutlier, TwoStepPrediction, two_step  # noqa: E402

__all__ += ["OneStepPrediction", "one_step", "CountResult", "one_step_spike_count", "outlier_count",
            "phase_boundary", "step_size", "PhaseDiagram", "phase_diagram", "finite_n_outlier_map", "TwoStepOutlier",
            "TwoStepPrediction", "two_step"]

# spiked-kernel part (issue 4): random-features kernels, sphere spectra, zonal problem, one-step spike
from .rf_kernel import SpikedGamma, arccos_kernel, dk_dB, dk_dB_relu, kernel_from_scalars, rf_kernel  # noqa: E402
from .sphere import (  # noqa: E402
    LinearSector,
    SphereSpectrum,
    funk_hecke,
    gegenbauer_P,
    harmonic_multiplicity,
    linear_sector,
    sphere_eigenvalues,
    zonal_harmonic,
)
from .spike import SpikeConstants, b_from_eta, eta_from_b, spike_constants  # noqa: E402
from .zonal import ZonalEigen, first_order_mixing, zonal_limit_operator, zonal_top_eigenfunction  # noqa: E402

__all__ += ["SpikedGamma", "arccos_kernel", "dk_dB", "dk_dB_relu", "kernel_from_scalars", "rf_kernel",
            "LinearSector", "SphereSpectrum", "funk_hecke", "gegenbauer_P", "harmonic_multiplicity",
            "linear_sector", "sphere_eigenvalues", "zonal_harmonic", "SpikeConstants", "b_from_eta",
            "eta_from_b", "spike_constants", "ZonalEigen", "first_order_mixing", "zonal_limit_operator",
            "zonal_top_eigenfunction"]

from .rf_kernel import gram_block  # noqa: E402  (Gram block on any array namespace)

__all__ += ["gram_block"]

# two-step bulk edge (deterministic, quadratic sigma, reused batch)
from .two_step_edge import two_step_bulk_edge  # noqa: E402

__all__ += ["two_step_bulk_edge"]
