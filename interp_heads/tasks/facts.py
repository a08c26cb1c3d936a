"""Fact tables and word pools the built-in tasks are generated from.

Every word that a corrupted prompt swaps in (names, objects, countries, colours) is a single token
of the embedded SmolLM2 tokenizer, both with and without a leading space, so a swap never changes
the prompt's token length; ``tests/integration/test_tasks_smollm.py`` checks this on every row.
Answers of a clean/corrupted pair always start with different characters, so their first tokens
differ under any tokenizer.
"""

from __future__ import annotations

NAMES = (
    "Adam", "Alex", "Alice", "Andrew", "Anna", "Ben", "Bob", "Carl", "Chris", "Dan", "Daniel",
    "David", "Emily", "Frank", "Fred", "George", "Greg", "Henry", "Jack", "James", "Jane", "Jim",
    "John", "Kim", "Lee", "Lily", "Luke", "Maria", "Mark", "Martin", "Mary", "Matt", "Max",
    "Michael", "Nick", "Paul", "Peter", "Ray", "Rob", "Rose", "Sam", "Sarah", "Simon", "Thomas",
    "Tim", "Tom", "Victor", "Will",
)  # fmt: skip

OBJECTS = (
    "bag", "ball", "bell", "belt", "bird", "book", "boot", "box", "bread", "brush",
    "bucket", "camera", "car", "chair", "clock", "coin", "cookie", "cup", "dog", "fish",
    "glass", "hat", "horse", "jar", "key", "map", "pen", "phone", "plate", "radio", "ring", "rug",
    "shirt", "sock", "wallet", "watch",
)  # fmt: skip

# country -> (capital, language, capital aliases)
COUNTRIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "France": ("Paris", "French", ()),
    "Spain": ("Madrid", "Spanish", ()),
    "Italy": ("Rome", "Italian", ()),
    "Germany": ("Berlin", "German", ()),
    "Japan": ("Tokyo", "Japanese", ()),
    "China": ("Beijing", "Chinese", ("Peking",)),
    "Russia": ("Moscow", "Russian", ()),
    "Egypt": ("Cairo", "Arabic", ()),
    "Greece": ("Athens", "Greek", ()),
    "Portugal": ("Lisbon", "Portuguese", ()),
    "England": ("London", "English", ()),
    "Canada": ("Ottawa", "English", ()),
    "Brazil": ("Brasilia", "Portuguese", ("Brasília",)),
    "Australia": ("Canberra", "English", ()),
    "Kenya": ("Nairobi", "Swahili", ()),
    "Poland": ("Warsaw", "Polish", ()),
    "Austria": ("Vienna", "German", ()),
    "Sweden": ("Stockholm", "Swedish", ()),
    "Norway": ("Oslo", "Norwegian", ()),
    "Denmark": ("Copenhagen", "Danish", ()),
    "Finland": ("Helsinki", "Finnish", ()),
    "Ireland": ("Dublin", "English", ()),
    "Turkey": ("Ankara", "Turkish", ()),
    "Iran": ("Tehran", "Persian", ("Teheran",)),
    "Iraq": ("Baghdad", "Arabic", ()),
    "Thailand": ("Bangkok", "Thai", ()),
    "Vietnam": ("Hanoi", "Vietnamese", ()),
    "Peru": ("Lima", "Spanish", ()),
    "Cuba": ("Havana", "Spanish", ()),
    "Hungary": ("Budapest", "Hungarian", ()),
    "Ukraine": ("Kyiv", "Ukrainian", ("Kiev",)),
    "Indonesia": ("Jakarta", "Indonesian", ()),
    "Colombia": ("Bogota", "Spanish", ("Bogotá",)),
    "Venezuela": ("Caracas", "Spanish", ()),
    "Scotland": ("Edinburgh", "English", ()),
    "Romania": ("Bucharest", "Romanian", ()),
    "Bulgaria": ("Sofia", "Bulgarian", ()),
    "Serbia": ("Belgrade", "Serbian", ()),
    "Croatia": ("Zagreb", "Croatian", ()),
    "Iceland": ("Reykjavik", "Icelandic", ("Reykjavík",)),
    "Nepal": ("Kathmandu", "Nepali", ()),
    "Syria": ("Damascus", "Arabic", ()),
    "Lebanon": ("Beirut", "Arabic", ()),
    "Afghanistan": ("Kabul", "Pashto", ()),
    "Bangladesh": ("Dhaka", "Bengali", ()),
    "Ghana": ("Accra", "English", ()),
    "Jamaica": ("Kingston", "English", ()),
    "Qatar": ("Doha", "Arabic", ()),
    "Libya": ("Tripoli", "Arabic", ()),
    "Ecuador": ("Quito", "Spanish", ()),
    "Chile": ("Santiago", "Spanish", ()),
    "Korea": ("Seoul", "Korean", ()),
    "Mongolia": ("Ulaanbaatar", "Mongolian", ("Ulan Bator",)),
    "Georgia": ("Tbilisi", "Georgian", ()),
    "Armenia": ("Yerevan", "Armenian", ()),
    "Latvia": ("Riga", "Latvian", ()),
    "Lithuania": ("Vilnius", "Lithuanian", ()),
    "Estonia": ("Tallinn", "Estonian", ()),
    "Belarus": ("Minsk", "Belarusian", ()),
    "Albania": ("Tirana", "Albanian", ()),
    "Malta": ("Valletta", "Maltese", ()),
    "Cyprus": ("Nicosia", "Greek", ()),
    "Sudan": ("Khartoum", "Arabic", ()),
    "Tunisia": ("Tunis", "Arabic", ()),
    "Uruguay": ("Montevideo", "Spanish", ()),
    "Taiwan": ("Taipei", "Mandarin", ()),
    "Somalia": ("Mogadishu", "Somali", ()),
    "Uganda": ("Kampala", "English", ()),
    "Senegal": ("Dakar", "French", ()),
    "Zimbabwe": ("Harare", "English", ()),
}

# Countries whose capital the embedded model mostly knows (capital templates use only these).
WELL_KNOWN_CAPITALS = (
    "France", "Spain", "Italy", "Germany", "Japan", "China", "Russia", "Egypt", "Greece",
    "Portugal", "England", "Canada", "Brazil", "Kenya", "Poland", "Austria", "Sweden", "Norway",
    "Denmark", "Ireland", "Thailand", "Peru", "Cuba", "Hungary", "Ukraine", "Indonesia",
    "Scotland", "Romania", "Bulgaria", "Afghanistan", "Bangladesh", "Chile", "Korea", "Somalia",
    "Finland", "Iraq", "Syria",
)  # fmt: skip

# Cities for keyed retrieval (any tokenization: only the query name differs between a clean and a
# corrupted prompt, and values in one prompt start with different letters).
CITIES = (
    "Paris", "Rome", "London", "Boston", "Chicago", "Oxford", "Berlin", "Tokyo", "Madrid", "Dublin",
    "Vienna", "Prague", "Lisbon", "Warsaw", "Athens", "Cairo", "Seoul", "Sydney", "Toronto",
    "Miami", "Denver", "Houston", "Geneva", "Munich", "Naples", "Venice", "Kyoto", "Lagos",
    "Nairobi", "Havana",
)  # fmt: skip
