"""An import-linter contract that is closed by default (pyproject.toml uses it).

`forbidden` lists what may not be imported, so a new gateway package is open to everyone
until someone remembers to add it. `allow_list` names what the source packages may import
from a target package; anything else there is a broken contract, new packages included."""

from __future__ import annotations

from typing import Any

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


class AllowListContract(Contract):
    type_name = "allow_list"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    target = fields.ModuleField()
    allowed_modules = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources: set[str] = set()
        for m in self._names(self.source_modules):
            sources |= {m} | graph.find_descendants(m)
        target: str = self.target.name  # type: ignore[attr-defined]
        allowed = self._names(self.allowed_modules)
        broken: list[tuple[str, str, list[int]]] = []
        for importer in sorted(sources):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if not _within(imported, target) or any(_within(imported, a) for a in allowed):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                broken.append((importer, imported, [int(d["line_number"]) for d in details]))
        return ContractCheck(kept=not broken, warnings=None, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, lines in check.metadata["broken"]:
            where = ", ".join(str(n) for n in lines)
            output.print_error(f"{importer} -> {imported} (l.{where})", bold=False)
            output.new_line()
        allowed = ", ".join(self._names(self.allowed_modules))
        output.print(f"Only these may be imported from {self.target}: {allowed}.")

    @staticmethod
    def _names(field_value: Any) -> list[str]:
        return [m.name for m in field_value]
