"""The composition root: the only package that knows every part.

`gateway/` is the library (MQTT in, validation, monitor, events, storage, notifications),
`agents/` the SOS playbooks, assistant and health manager, `simulators/` the devices. This
package assembles them (`wiring`), runs the command line (`cli`, the `healthgw` command), the
one-off commands that need both sides (`commands`) and the demo (`demo`). The layers are
enforced by import-linter (`make lint`, contracts in pyproject.toml)."""
