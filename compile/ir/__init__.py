"""The compiler's tensor IR: Relay-like operators (:mod:`compile.ir.ops`), a DAG with static
shapes (:mod:`compile.ir.graph`) and a Relay-style text form that round-trips
(:mod:`compile.ir.text`)."""
from compile.ir.graph import Const, Graph, Node, Value, Var, call, const, topological, var
from compile.ir.text import parse, to_text

__all__ = ["Const", "Graph", "Node", "Value", "Var", "call", "const", "topological", "var", "parse", "to_text"]
