"""Placeholder: being written."""


def evaluate(*args, **kwargs):
    raise NotImplementedError
