"""Finding what applies: the index, chunking, embedders, the two legs, ranking and evaluation.

The index is SQLite (`.kb/index.db`), a cache of the files git holds. The BM25 leg reads its FTS5 rows and the
vector leg its vectors; fusion (a convex combination of the legs' scores, kbtool.search.ranking) ranks cards in
the query pipeline. Around them: one answer from several knowledge bases' searches, snippets, English and Chinese
brought together (CC-CEDICT in the BM25 leg, a multilingual model in a second vector leg), and the gold-query
evaluation (`kb eval`)."""
