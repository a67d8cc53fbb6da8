"""Pure decisions: ``plan(obj, jobs, context) -> Plan`` (DESIGN §4-§6). No I/O, no clock."""
