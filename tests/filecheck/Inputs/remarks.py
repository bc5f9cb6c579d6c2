# Source of tests/filecheck/detect-gemm-remarks.mix (the locations point here).
def f(x, m):
    d = np.dot(x, x)
    return m @ x, d
