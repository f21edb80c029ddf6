"""Finding what applies: the index, chunking, embedders, the two legs, ranking and evaluation.

Finding what applies: the SQLite index, chunking, embedders, the BM25 and vector legs, rank
fusion, the query pipeline, and the gold-query evaluation."""
