"""Sampling and measurement on arrays (numpy by default, cupy on request)."""
from .backend import Backend, BackendUnavailable, get_backend, to_numpy

__all__ = ["Backend", "BackendUnavailable", "get_backend", "to_numpy"]

# two-step part (issue 3): the two-layer model and its gradient steps
from .model import (  # noqa: E402
    correlation_grad,
    gd_steps,
    init_first_layer,
    init_second_layer,
    sample_inputs,
    sample_targets,
)

__all__ += ["correlation_grad", "gd_steps", "init_first_layer", "init_second_layer",
            "sample_inputs", "sample_targets"]

# classical part (issue 2): spectra of sampled matrices
from .spectra import (  # noqa: E402
    ESD,
    TopEigenpairs,
    TopTriplets,
    count_outliers,
    eigenvalues_of_gram,
    empirical_spectral_density,
    gram_eigenvalues,
    ks_distance_mp,
    singular_values,
    squared_overlaps,
    top_eigenpairs,
    top_singular_triplets,
)

__all__ += ["ESD", "TopEigenpairs", "TopTriplets", "count_outliers", "eigenvalues_of_gram",
            "empirical_spectral_density", "gram_eigenvalues", "ks_distance_mp", "singular_values",
            "squared_overlaps", "top_eigenpairs", "top_singular_triplets"]
from .sampling import SpikedMatrix, gaussian_matrix, haar_frame, spiked_matrix  # noqa: E402

__all__ += ["SpikedMatrix", "gaussian_matrix", "haar_frame", "spiked_matrix"]

# gradient-flow part (issue 5): the flow from small initialisation and its measurements
from .flow import (  # noqa: E402
    FlowRun,
    active_count,
    find_plateaus,
    is_zero_preserving,
    kth_to_max_ratio,
    simulate_flow,
    winner_share,
)

__all__ += ["FlowRun", "active_count", "find_plateaus", "is_zero_preserving", "kth_to_max_ratio",
            "simulate_flow", "winner_share"]

# two-step part (issue 3): simulations of one and two steps
from .two_step import (  # noqa: E402
    StepSimulation,
    empirical_phase_diagram,
    quadratic_bulk,
    separated_count,
    simulate_one_step,
    simulate_two_step,
    taylor_term_weights,
)

__all__ += ["StepSimulation", "empirical_phase_diagram", "quadratic_bulk", "separated_count", "simulate_one_step",
            "simulate_two_step", "taylor_term_weights"]
from .sampling import SpikedMeasurement, measure_spiked  # noqa: E402

__all__ += ["SpikedMeasurement", "measure_spiked"]

# spiked-kernel part (issue 4): kernel Gram matrices and one-step spiked features
from .kernels import (  # noqa: E402
    empirical_rf_kernel,
    gram_alignment,
    gram_degree_eigenvalues,
    harmonic_vectors,
    kernel_gram,
    linear_sector_gram,
    sample_sphere,
    top_gram_eigenpairs,
)
from .spiked_features import generalisation_experiment, measure_spike, one_step_weights, ridge_predict  # noqa: E402

__all__ += ["empirical_rf_kernel", "gram_alignment", "gram_degree_eigenvalues", "harmonic_vectors", "kernel_gram",
            "linear_sector_gram", "sample_sphere", "top_gram_eigenpairs", "generalisation_experiment",
            "measure_spike", "one_step_weights", "ridge_predict"]
from .kernels import eigvec_alignment  # noqa: E402

__all__ += ["eigvec_alignment"]

from .kernels import activate  # noqa: E402  (sigma on numpy or cupy arrays)

__all__ += ["activate"]

# performance / GPU (issue 8): Lanczos top triplets, one-eigh dense spectrum, device-stream normals
from .lanczos import LanczosResult, lanczos_triplets  # noqa: E402
from .sampling import device_normal  # noqa: E402
from .spectra import dense_spectrum_and_top  # noqa: E402

__all__ += ["LanczosResult", "lanczos_triplets", "device_normal", "dense_spectrum_and_top"]
