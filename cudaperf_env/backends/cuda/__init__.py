"""The ``cuda`` backend: real GPUs (nvcc builds, device buffers, hardened timing)."""
