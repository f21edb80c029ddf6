"""What a card is: the vocabulary, the card models, their markdown form and the contracts.

Beside those: field paths, the records passed around, a knowledge base's own schemas, and the typed contract
of each operation (kbtool.model.contracts). It is the first package of kbtool/layout.py: it imports no other
part of kbtool, and every other package builds on it."""
