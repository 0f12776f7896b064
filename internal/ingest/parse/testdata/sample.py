import os


def f(x):
    y = x + 1

    return y


class C:
    pass
