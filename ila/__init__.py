"""The ILA DSL: Instruction-Level Abstraction models in Python, mirroring ILAng in snake_case.

One semantics (``ila.semantics.TABLE``) is lowered both to a numpy simulator (``ila.sim``) and to
SMT through pysmt (``ila.smt``). See ``docs/ila_api.md`` for a tour.
"""
from .errors import (DecodeError, DuplicateNameError, IlaError, IlaInternalError, SimulationError,
                     SortError, UndeclaredError, UpdateError, WidthError)
from .expr import (FALSE, TRUE, Expr, FuncRef, bool_const, bv_const, concat, eq, extract, implies,
                   ite, land, load, lor, rotl, rotr, sext, store, zext)
from .model import Ila, Instr
from .ops import Op
from .sorts import BOOL, BV, BoolSort, BvSort, Mem, MemSort

__all__ = [
    "Ila", "Instr", "Expr", "FuncRef", "Op",
    "BOOL", "BV", "Mem", "BoolSort", "BvSort", "MemSort",
    "bv_const", "bool_const", "TRUE", "FALSE", "ite", "implies", "land", "lor", "eq",
    "concat", "extract", "zext", "sext", "rotl", "rotr", "load", "store",
    "IlaError", "SortError", "WidthError", "UndeclaredError", "DuplicateNameError", "DecodeError",
    "UpdateError", "SimulationError", "IlaInternalError",
]
