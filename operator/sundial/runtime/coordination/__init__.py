"""The coordination wing: which replica may act on which shard, right now (DESIGN §7).

It owns the shard and member Leases as the operator sees them (:mod:`.leadership`: acquire, renew, hand
off), the pure decision of what a replica does with one Lease record (:mod:`.decisions`), the elector that
calls the API and applies those decisions (:mod:`.electors`), the renewals' own thread (:mod:`.leasethread`)
and the pure, deterministic assignment of shards to live members (:mod:`.assignment`). It satisfies
:class:`sundial.runtime.fencing.Acting` for the writers. It may import :mod:`sundial.runtime.fencing`, the
serving wing's metrics, the settings and ``sundial.kube``; it never imports the watch, dispatch or acting
wings.
"""
