"""The synthetic corpus: numbers from 0 to 9,999 in Russian words -> the same numbers in English
words. A real, tiny translation task (agreement, compounds, word order) with nothing to download."""

from __future__ import annotations

_RU_UNITS = "ноль один два три четыре пять шесть семь восемь девять".split()
_RU_TEENS = ("десять одиннадцать двенадцать тринадцать четырнадцать пятнадцать шестнадцать "
             "семнадцать восемнадцать девятнадцать").split()
_RU_TENS = "_ _ двадцать тридцать сорок пятьдесят шестьдесят семьдесят восемьдесят девяносто".split()
_RU_HUNDREDS = "_ сто двести триста четыреста пятьсот шестьсот семьсот восемьсот девятьсот".split()
# Thousands agree in gender and case with the number: одна тысяча, две/три/четыре тысячи, пять тысяч.
_RU_THOUSANDS = ["_", "одна тысяча", "две тысячи", "три тысячи", "четыре тысячи",
                 *(f"{u} тысяч" for u in _RU_UNITS[5:])]
_EN_UNITS = "zero one two three four five six seven eight nine".split()
_EN_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_EN_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def russian_number(n: int) -> str:
    """0 <= n <= 9999 in Russian words, e.g. 2021 -> "две тысячи двадцать один"."""
    return _number_words(n, _RU_UNITS, _RU_TEENS, _RU_TENS, lambda h: _RU_HUNDREDS[h], lambda t: _RU_THOUSANDS[t], " ")


def english_number(n: int) -> str:
    """0 <= n <= 9999 in English words, e.g. 2021 -> "two thousand twenty-one"."""
    return _number_words(
        n, _EN_UNITS, _EN_TEENS, _EN_TENS, lambda h: f"{_EN_UNITS[h]} hundred", lambda t: f"{_EN_UNITS[t]} thousand", "-"
    )


def _number_words(n, units, teens, tens, hundreds, thousands, tens_joiner) -> str:
    if not 0 <= n <= 9999:
        raise ValueError(f"The synthetic corpus spells numbers from 0 to 9999, got {n}.")
    if n == 0:
        return units[0]
    words = []
    if n >= 1000:
        words.append(thousands(n // 1000))
    if n % 1000 >= 100:
        words.append(hundreds(n % 1000 // 100))
    rest = n % 100
    if 10 <= rest < 20:
        words.append(teens[rest - 10])
    elif rest >= 20:
        words.append(tens[rest // 10] + (f"{tens_joiner}{units[rest % 10]}" if rest % 10 else ""))
    elif rest > 0:
        words.append(units[rest])
    return " ".join(words)


def synthetic_pairs() -> list[tuple[str, str]]:
    """All 10,000 pairs (Russian words, English words) for the numbers 0 ... 9999."""
    return [(russian_number(n), english_number(n)) for n in range(10_000)]
