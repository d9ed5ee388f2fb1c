"""UQ methods behind one interface, found by name through the registry."""

from methods.registry import get_method, get_method_class, list_methods, register

__all__ = ["get_method", "get_method_class", "list_methods", "register"]
