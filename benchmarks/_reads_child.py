"""The client process of ``benchmarks.reads_check`` (JSON arguments on stdin)."""

from .reads_check import child_main

if __name__ == "__main__":
    child_main()
