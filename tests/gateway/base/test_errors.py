"""Every exception class the project defines derives from the one root, HealthGWError (as
aiomqtt has MqttError): a caller can catch "anything healthgw raised" in one clause."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from gateway.base.errors import HealthGWError

PACKAGES = ("healthgw", "gateway", "agents", "simulators")


def _project_exceptions() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        modules = [pkg] + [
            importlib.import_module(m.name)
            for m in pkgutil.walk_packages(pkg.__path__, prefix=f"{name}.")
            if not m.name.endswith("__main__")
        ]
        for mod in modules:
            for _, obj in inspect.getmembers(mod, inspect.isclass):
                if obj.__module__ == mod.__name__ and issubclass(obj, BaseException):
                    found.append(obj)
    return found


def test_every_error_class_has_the_root() -> None:
    classes = _project_exceptions()
    assert len(classes) > 20  # the walk found the project's errors, not nothing
    strays = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes
                    if not issubclass(c, HealthGWError))  # fmt: skip
    assert not strays, f"not derived from HealthGWError: {strays}"
