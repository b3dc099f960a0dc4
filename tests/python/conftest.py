"""Shared pytest set-up for tests/python (run by scripts/test.sh in a venv with the wheel installed;
by hand: `PYTHONPATH=python python3 -m pytest tests/python` after `bash python/dev_build.sh`).

Fixtures:
  fashion_mnist_dir  the Fashion-MNIST folder (IDX files): $KILN_DATASETS/fashion-mnist, else
                     Debian's /usr/share/datasets/fashion-mnist (dataset-fashion-mnist); skips the
                     test when neither has train-images-idx3-ubyte(.gz)
  cifar10_dir        a CIFAR-10 binary folder (data_batch_1.bin ...) under $KILN_DATASETS, or skip
  rng                numpy.random.default_rng(0)
  kiln_cli           the `kiln` executable of a build tree ($KILN_CLI, else build/kiln), or skip
Markers:
  slow               long tests (deselect with -m "not slow")
  gpu                needs a CUDA GPU Kiln can use: skipped otherwise, with Kiln's reason
The header of the run says which kiln is under test (file, version, CUDA module, GPU).
"""
import os
import shutil
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEBIAN_DATASETS = "/usr/share/datasets"


def _dataset_dir(name, probe):
    """First folder among $KILN_DATASETS/name and /usr/share/datasets/name holding one of probe."""
    roots = [r for r in (os.environ.get("KILN_DATASETS"), DEBIAN_DATASETS) if r]
    for root in roots:
        d = os.path.join(root, name)
        if any(os.path.exists(os.path.join(d, p)) for p in probe):
            return d
    return None


def _kiln_ext():
    try:
        import kiln._kiln as k
        return k, None
    except Exception as e:  # reported in the header; the tests then fail on their own import
        return None, e


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long test (deselect with -m 'not slow')")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU that Kiln can use (skipped otherwise)")


def pytest_report_header(config):
    k, err = _kiln_ext()
    if k is None:
        return [f"kiln: cannot import kiln._kiln: {err!r} (sys.path[0:3]={sys.path[:3]})"]
    line = f"kiln {k.version()}: {os.path.dirname(os.path.realpath(k.__file__))}"
    if hasattr(k, "built_with_cuda"):
        line += f", CUDA module {'built' if k.built_with_cuda() else 'not built'}"
    return [line]


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    k, _ = _kiln_ext()
    if k is not None and hasattr(k, "gpu_available") and k.gpu_available():
        return
    reason = "no GPU"
    if k is not None and hasattr(k, "gpu_unavailable_reason"):
        reason = f"no GPU: {k.gpu_unavailable_reason()}"
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fashion_mnist_dir():
    d = _dataset_dir("fashion-mnist", ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"))
    if d is None:
        pytest.skip("Fashion-MNIST not found (apt-get install dataset-fashion-mnist, or set "
                    "KILN_DATASETS to a folder with fashion-mnist/)")
    return d


@pytest.fixture(scope="session")
def cifar10_dir():
    for name in ("cifar-10-batches-bin", "cifar10", "cifar-10"):
        d = _dataset_dir(name, ("data_batch_1.bin",))
        if d is not None:
            return d
    pytest.skip("CIFAR-10 binary batches not found (set KILN_DATASETS to a folder with "
                "cifar-10-batches-bin/data_batch_1.bin ...)")


@pytest.fixture
def rng():
    import numpy as np
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def kiln_cli():
    exe = os.environ.get("KILN_CLI") or os.path.join(REPO, "build", "kiln")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        exe = shutil.which("kiln") if not os.environ.get("KILN_CLI") else None
    if not exe:
        pytest.skip("no kiln executable (bash scripts/build.sh, or set KILN_CLI)")
    return exe
