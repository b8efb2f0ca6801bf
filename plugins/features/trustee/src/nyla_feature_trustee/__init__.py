"""The trustee (Swiss SME accounting) feature: tables, seeded data, ontology, benchmark questions."""
