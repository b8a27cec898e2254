"""Sampling and measurement on arrays (numpy by default, ``backend="cupy"`` on request).

One flat namespace, one block per topic; the modules behind it are private.
Randomness only through the keyword ``rng=`` (docs/api.md).
"""
from __future__ import annotations

# --- backends: numpy, or cupy on request (never imported unless asked for)
from ._backend import Backend, BackendUnavailable, get_backend, to_numpy

# --- classical: sampled matrices, spectra, certified top-k solvers
from ._classical.spectra import (
    count_outliers,
    dense_spectrum_and_top,
    DenseSpectrum,
    eigenvalues_of_gram,
    empirical_spectral_density,
    ESD,
    gram_eigenvalues,
    ks_distance_mp,
    singular_values,
    squared_overlaps,
    top_eigenpairs,
    top_singular_triplets,
    TopEigenpairs,
    TopTriplets,
)
from ._classical.sampling import (
    device_normal,
    gaussian_matrix,
    haar_frame,
    measure_spiked,
    spiked_matrix,
    SpikedMatrix,
    SpikedMeasurement,
)
from ._classical.lanczos import lanczos_triplets, LanczosResult
from rmtfl.theory import edge_outlier_count, EdgeCount   # the count rule is shared with the theory
from ._classical.ck import ck_gram, CKSample, ks_distance_ck, simulate_ck

# --- two_step: the two-layer model, its gradient steps, one- and two-step simulations
from ._two_step.model import (
    correlation_grad,
    gd_steps,
    gd_trajectory,
    init_first_layer,
    init_second_layer,
    sample_inputs,
    sample_targets,
)
from ._two_step.two_step import (
    empirical_phase_diagram,
    EmpiricalPhaseDiagram,
    quadratic_bulk,
    separated_count,
    simulate_one_step,
    simulate_two_step,
    StepSimulation,
    taylor_term_weights,
)
from ._two_step.semi_analytic import two_step_semi_analytic
from ._two_step.ck_step import CKStepSample, simulate_ck_one_step

# --- spiked_kernel: kernel Gram matrices, one-step spiked features
from ._spiked_kernel.sampling import harmonic_vectors, random_direction, sample_measure, sample_sphere
from ._spiked_kernel.kernels import activate, empirical_rf_kernel, kernel_gram
from ._spiked_kernel.gram_eigenpairs import GramEigenpairs, top_gram_eigenpairs
from ._spiked_kernel.gram_experiments import (
    DegreeBlocks,
    eigvec_alignment,
    EigvecAlignment,
    gram_alignment,
    gram_degree_eigenvalues,
    GramAlignment,
    linear_sector_gram,
    LinearSectorEstimate,
)
from ._spiked_kernel.spiked_features import (
    generalisation_experiment,
    GeneralisationResult,
    KernelBaseline,
    measure_spike,
    one_step_weights,
    OneStep,
    ridge_predict,
    SpikeMeasurement,
)

# --- gradient_flow: the flow from small initialisation and its measurements
from ._gradient_flow.flow import (
    active_count,
    find_plateaus,
    FlowRun,
    is_zero_preserving,
    kth_to_max_ratio,
    log_time_grid,
    path_distance,
    Plateau,
    simulate_flow,
    winner_share,
)


__all__ = [
    "Backend", "BackendUnavailable", "get_backend", "to_numpy", "count_outliers", "dense_spectrum_and_top",
    "DenseSpectrum", "eigenvalues_of_gram", "empirical_spectral_density", "ESD", "gram_eigenvalues",
    "ks_distance_mp",
    "singular_values", "squared_overlaps", "top_eigenpairs", "top_singular_triplets", "TopEigenpairs",
    "TopTriplets", "device_normal", "gaussian_matrix", "haar_frame", "measure_spiked", "spiked_matrix",
    "SpikedMatrix", "SpikedMeasurement", "lanczos_triplets", "LanczosResult", "edge_outlier_count", "EdgeCount",
    "ck_gram", "CKSample", "ks_distance_ck", "simulate_ck", "correlation_grad", "gd_steps",
    "gd_trajectory", "init_first_layer", "init_second_layer", "sample_inputs", "sample_targets",
    "empirical_phase_diagram", "EmpiricalPhaseDiagram", "quadratic_bulk", "separated_count", "simulate_one_step",
    "simulate_two_step", "StepSimulation", "taylor_term_weights", "two_step_semi_analytic",
    "CKStepSample", "simulate_ck_one_step",
    # spiked_kernel
    "activate", "DegreeBlocks", "eigvec_alignment", "EigvecAlignment", "empirical_rf_kernel", "gram_alignment",
    "gram_degree_eigenvalues", "GramAlignment", "GramEigenpairs", "harmonic_vectors", "kernel_gram",
    "linear_sector_gram", "LinearSectorEstimate", "random_direction", "sample_measure", "sample_sphere",
    "top_gram_eigenpairs", "generalisation_experiment", "GeneralisationResult", "KernelBaseline",
    "measure_spike", "one_step_weights", "OneStep", "ridge_predict", "SpikeMeasurement",
    # gradient_flow
    "active_count", "find_plateaus", "FlowRun", "is_zero_preserving", "kth_to_max_ratio", "log_time_grid",
    "path_distance", "Plateau", "simulate_flow", "winner_share",
]
