"""The household: who lives here, their devices, contacts and directories (model: the
household file, HEALTHGW_HOUSEHOLD, validated once), read safely (load), and each person's
retained picture on health/{person}/state (state). Agents and simulators may import model."""

__all__ = ["load", "model", "state"]
