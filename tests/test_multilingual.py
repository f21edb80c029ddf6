from kbtool.search.multilingual import cjk_share


def test_english_is_not_chinese():
    assert cjk_share("Chunked prefill splits a long prompt across steps") == 0.0


def test_chinese_prose_with_terms_and_numbers_is_mostly_chinese():
    # the metainfer notes' style: Chinese sentences around English term names and figures
    assert cjk_share("分块 Prefill：当提示超过批次的 token 预算 2048 时，调度器把它拆成多步。") > 0.5


def test_code_heavy_section_with_a_chinese_comment_is_not():
    assert cjk_share("def allocate(block_manager, seq):  # 分配\n    return block_manager.allocate(seq)") < 0.5


def test_text_without_letters_has_no_share():
    assert cjk_share("1234 -- ** ==") == 0.0
