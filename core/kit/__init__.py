"""What seqd's byte models share: hashing a context to a slot, table memory, tables that grow, the number
predictor, the probability maps' knots, the tables of a model's versions, and the face a model shows the rest
of seqd (``docs/architecture.md``).  Each module is imported by name (``from ..kit.growth import ...``)."""
