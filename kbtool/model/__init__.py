"""What a card is: the vocabulary, the card models, their markdown form and the contracts.

What a card is: the vocabulary, the card models, their markdown form, field paths, the
records passed around, a knowledge base's own schemas, and the typed contract of each operation."""
