"""nki.typing: the annotations NKI kernels use. They document; ncore checks shapes when tracing."""


class _Annotation:
    def __class_getitem__(cls, item):
        return cls


class tensor(_Annotation):  # noqa: N801 (NKI's name)
    pass


class mutable_tensor(_Annotation):  # noqa: N801
    pass


class scalar(_Annotation):  # noqa: N801
    pass
