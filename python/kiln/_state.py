"""Process-wide settings the TensorFlow-shaped functions set and compile/fit read.

Kiln has no global graph or session: these are plain values picked up when a model is compiled
(device, threads, placement logging, precision) or first built (seed)."""

seed = None                    # tf.random.set_seed / keras.utils.set_random_seed
threads = 0                    # tf.config.threading.set_intra_op_parallelism_threads (0: all cores)
log_device_placement = False   # tf.debugging.set_log_device_placement
precision = "float32"          # keras.mixed_precision.set_global_policy
device_stack = []              # tf.device(...) contexts, innermost last: "cpu" / "cuda"
strategy_stack = []            # MirroredStrategy.scope() contexts
fit_count = 0                  # varies the shuffle order between fit calls, as Keras does


def current_device():
    """The device of the innermost tf.device() context, or None."""
    return device_stack[-1] if device_stack else None


def current_strategy():
    return strategy_stack[-1] if strategy_stack else None
