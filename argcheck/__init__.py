"""argcheck: the argument checks of every tier, written once (contract/CONTRACT.md, "Bad input").

Every tier (stage1_python, stage2_numpy, stage3_c, stage4_cuda) imports this package and nothing
else of the project. A tier describes its arrays through a small adapter (signatures.py says
what it holds); `bind(adapter)` then gives one check per op of the contract, so the same bad call
gets the same exception and the same message in every tier:
`<op>: <argument> must <expected>, got <actual>`, a TypeError for a wrong kind of argument, a
ValueError for a wrong value (errors.py).

Modules, one concept each: errors (the message format), limits (sizes no tier allocates beyond),
metadata (an array's shape, dtype and layout, read from any tier's arrays), arrays and scalars
(the vocabulary), windows (convolution and pooling geometry), signatures (every op's check).
"""

from .errors import fail, fail_type, format_shape
from .limits import MAX_ELEMENTS, MAX_INT, SEED_LIMIT, check_elements
from .metadata import ArrayInfo, from_interface, from_nested_list, interface_of
from .scalars import choice, flag, integer, is_int, real, seed, shape_argument
from .signatures import SIGNATURES, bind

__all__ = [
    "MAX_ELEMENTS",
    "MAX_INT",
    "SEED_LIMIT",
    "SIGNATURES",
    "ArrayInfo",
    "bind",
    "check_elements",
    "choice",
    "fail",
    "fail_type",
    "flag",
    "format_shape",
    "from_interface",
    "from_nested_list",
    "integer",
    "interface_of",
    "is_int",
    "real",
    "seed",
    "shape_argument",
]
