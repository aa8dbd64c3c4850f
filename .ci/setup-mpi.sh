#!/usr/bin/env bash
# Installs what the multi-process tests of retrograd.distributed need
# (tests/test_distributed.py::test_two_processes_under_mpirun): Open MPI and mpi4py.
# Without them that test skips; the single-process tests need neither.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then  # mpi4py builds with mpicc
  $SUDO apt-get update
  $SUDO apt-get install -y libopenmpi-dev openmpi-bin
fi
python3 -m pip install mpi4py
python3 -c "import mpi4py; print('mpi4py', mpi4py.__version__)"
