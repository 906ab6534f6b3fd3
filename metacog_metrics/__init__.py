"""metacog-eval statistics: pure numpy/scipy/pandas/scikit-learn, no harness imports."""
