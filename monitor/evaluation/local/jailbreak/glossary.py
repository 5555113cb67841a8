"""The few ideas an override or extraction attempt is built from, in many languages.

Public attack sets are mostly English, so the n-gram weights know "ignore all previous
instructions" well and its Basque or Tagalog wording hardly at all. :func:`concepts` names the
ideas a text uses — set aside, earlier, instructions, the system prompt, show it, without limits,
a new role — as one marker word each, whatever the language; the detector adds the markers to the
text it reads, so what the model learns of an idea in one language carries to the others. The
markers say nothing alone: a benign "ignore my last message" in Turkish uses two of them, and the
model weighs them as it learned from benign and attack texts alike.

Cost: one dictionary look-up per word of the bounded view, and a substring scan per term for
scripts written without spaces (only when the view has such characters, and only of its first
KiB and last half KiB).
"""

from __future__ import annotations

__all__ = ["CONCEPTS", "concepts"]

# Marker words: letters no language here writes together, so their n-grams are their own.
CONCEPTS = ("qxignore", "qxearlier", "qxrules", "qxsystem", "qxshow", "qxnolimit", "qxrole")

_WORDS: dict[str, tuple[str, ...]] = {
    "qxignore": (
        "ignore", "ignoring", "disregard", "forget", "override", "bypass", "overlook",
        "ignora", "ignorar", "ignore", "ignoren", "olvida", "olvidar", "olvide", "descarta", "omite",  # es
        "esqueça", "esqueca", "desconsidere", "desconsidera", "ignorem",  # pt
        "ignorez", "oublie", "oubliez", "ignorer",  # fr
        "ignoriere", "ignorieren", "ignoriert", "vergiss", "vergessen", "missachte", "übergehe",  # de
        "ignorate", "dimentica", "dimenticate", "trascura",  # it
        "negeer", "vergeet",  # nl
        "zignoruj", "ignoruj", "zapomnij", "pomiń", "pomin",  # pl
        "игнорируй", "игнорируйте", "игнорировать", "забудь", "забудьте", "проигнорируй",  # ru
        "ігноруй", "ігноруйте", "забудь",  # uk
        "ignorera", "glöm", "glom",  # sv
        "ignorer", "glem",  # da, no
        "ohita", "unohda", "sivuuta",  # fi
        "zapomeň", "zapomen", "ignorujte",  # cs
        "ignoră", "uită", "uita",  # ro
        "αγνόησε", "αγνοήστε", "ξέχασε", "ξεχάστε",  # el
        "yoksay", "unut", "görmezden", "gormezden",  # tr
        "تجاهل", "انس", "أهمل",  # ar
        "התעלם", "שכח", "תתעלם", "תשכח",  # he
        "अनदेखा", "नज़रअंदाज़", "नजरअंदाज", "भूल", "भूल",  # hi
        "abaikan", "lupakan",  # id, ms
        "quên",  # vi
        "puuza", "sahau",  # sw
        "pansinin", "kalimutan",  # tl
        "ahaztu", "baztertu", "ezikusi",  # eu
        "oblida", "oblideu",  # ca
        "esquece", "esquecede",  # gl
        "figyelmen", "felejtsd",  # hu
    ),
    "qxearlier": (
        "previous", "prior", "above", "earlier", "preceding", "original", "initial", "former",
        "anteriores", "anterior", "previas", "previos", "iniciales", "originales",  # es
        "iniciais", "originais",  # pt
        "précédentes", "precedentes", "précédents", "précédent", "initiales", "antérieures",  # fr
        "vorherigen", "vorherige", "bisherigen", "vorigen", "obigen", "ursprünglichen", "ursprunglichen",  # de
        "precedenti", "iniziali", "originali",  # it
        "vorige", "eerdere", "oorspronkelijke",  # nl
        "poprzednie", "wcześniejsze", "wczesniejsze", "początkowe", "poczatkowe",  # pl
        "предыдущие", "предыдущих", "прежние", "изначальные", "исходные",  # ru
        "попередні", "попередніх",  # uk
        "tidigare", "ursprungliga",  # sv
        "tidligere", "oprindelige", "opprinnelige",  # da, no
        "aiemmat", "edelliset", "alkuperäiset", "alkuperaiset", "aiemmin",  # fi
        "předchozí", "predchozi",  # cs
        "anterioare",  # ro
        "προηγούμενες", "προηγούμενες",  # el
        "önceki", "onceki",  # tr
        "السابقة",  # ar
        "הקודמות", "המקוריות",  # he
        "पिछले", "पिछली", "पूर्व",  # hi
        "sebelumnya", "awal",  # id
        
        "awali", "zilizopita",  # sw
        "naunang",   # tl
        "aurreko", "aurreko", "hasierako",  # eu
        "anteriors",  # ca
        "korábbi", "korabbi", "előző", "elozo",  # hu
    ),
    "qxrules": (
        "instructions", "instruction", "rules", "guidelines", "directives", "orders", "commands", "restrictions",
        "instrucciones", "reglas", "normas", "directrices", "órdenes", "ordenes", "restricciones",  # es
        "instruções", "instrucoes", "regras", "diretrizes", "ordens", "restrições", "restricoes",  # pt
        "consignes", "règles", "regles", "directives", "ordres",  # fr
        "anweisungen", "anleitungen", "regeln", "befehle", "vorgaben", "richtlinien", "einschränkungen",  # de
        "istruzioni", "regole", "direttive", "ordini", "restrizioni",  # it
        "instructies", "regels", "richtlijnen", "opdrachten",  # nl
        "instrukcje", "instrukcji", "zasady", "polecenia", "poleceń", "polecen", "ograniczenia",  # pl
        "инструкции", "инструкций", "правила", "указания", "команды", "ограничения",  # ru
        "інструкції", "інструкцій", "правила", "вказівки",  # uk
        "instruktioner", "regler", "riktlinjer",  # sv
        "instruktioner", "instruksjoner", "retningslinjer",  # da, no
        "ohjeet", "ohjeesi", "säännöt", "saannot", "ohjeita",  # fi
        "instrukce", "pokyny", "pravidla",  # cs
        "instrucțiunile", "instructiunile", "regulile",  # ro
        "οδηγίες", "κανόνες",  # el
        "talimatları", "talimatlari", "talimatlar", "kuralları", "kurallari", "kurallar",  # tr
        "التعليمات", "تعليمات", "القواعد",  # ar
        "ההוראות", "הוראות", "הכללים", "ההנחיות",  # he
        "निर्देश", "निर्देशों", "नियम", "नियमों",  # hi
        "instruksi", "aturan", "perintah",  # id
        
        "maagizo", "maelekezo", "sheria",  # sw
        "tagubilin", "panuto", "utos",  # tl
        "argibideak", "jarraibideak", "arauak",  # eu
        "instruccions", "regles",  # ca
        "instrucións", "instrucions", "regras",  # gl
        "utasítást", "utasitast", "utasításokat", "utasitasokat", "szabályokat",  # hu
    ),
    "qxsystem": (
        "system", "prompt", "systemprompt", "system-prompt", "sysprompt",
        "sistema", "indicaciones",  # es, pt, it, ca, gl
        "système", "systeme",  # fr
        "systemprompt", "systemnachricht", "systemanweisung",  # de
        "systeem", "systeemprompt",  # nl
        "systemowy", "systemu", "systemowe",  # pl
        "системный", "системные", "системного", "системы", "промпт",  # ru
        "системний", "системи",  # uk
        "systemprompten", "systemets",  # sv, da, no
        "järjestelmä", "jarjestelma", "järjestelmäkehote", "kehote",  # fi
        "systémový", "systemovy",  # cs
        "συστήματος",  # el
        "sistem",  # tr, id, ro
        "النظام",  # ar
        "המערכת",  # he
        "सिस्टम",  # hi
        "hệ", "thống",  # vi
        "mfumo",  # sw
        "sistema",  # tl
        "sistemaren", "sistemako",  # eu
        "rendszer", "rendszerpromptot",  # hu
    ),
    "qxshow": (
        "reveal", "show", "print", "display", "output", "repeat", "recite", "disclose", "leak", "dump", "quote",
        "muestra", "muéstrame", "muestrame", "revela", "revélame", "imprime", "repite", "enseña",   # es
        "mostre", "mostra", "revele", "imprima", "repita",  # pt
        "montre", "montrez", "révèle", "révélez", "revele", "affiche", "affichez", "répète", "repete", "imprime",  # fr
        "zeig", "zeige", "zeigen", "verrate", "wiederhole", "drucke", "ausgeben",  # de
        "mostrami", "rivela", "stampa", "ripeti", "mostra",  # it
        "toon", "onthul", "herhaal",  # nl
        "pokaż", "pokaz", "ujawnij", "wypisz", "powtórz", "powtorz",  # pl
        "покажи", "покажите", "раскрой", "выведи", "повтори",   # ru
        "покажи", "розкрий", "виведи",  # uk
        "visa", "avslöja", "upprepa",  # sv
        "vis", "afslør", "avslør", "gentag", "gjenta",  # da, no
        "näytä", "nayta", "paljasta", "toista",   # fi
        "ukaž", "ukaz", "vypiš", "vypis", "zopakuj",  # cs
        "arată", "arata", "dezvăluie",  # ro
        "δείξε", "αποκάλυψε",  # el
        "göster", "goster", "yazdır", "yazdir", "tekrarla",  # tr
        "اعرض", "أظهر", "اكشف", "اطبع",  # ar
        "הצג", "הראה", "חשוף",   # he
        "दिखाओ", "दिखाएं", "बताओ", "प्रकट",  # hi
        "tampilkan", "tunjukkan", "ungkapkan", "ulangi",  # id
        
        "onyesha", "fichua", "rudia",  # sw
        "ipakita", "ibunyag", "ulitin",  # tl
        "erakutsi", "erakutsidazu", "esaidazu",   # eu
        "mostra'm", "revela", "mostrame",  # ca, gl
        "mutasd", "írd", "ird",  # hu
    ),
    "qxnolimit": (
        "unrestricted", "unfiltered", "uncensored", "unlimited", "limitless", "restrictions", "filters", "censorship",
        "restricciones", "límites", "limites", "filtros", "censura",  # es, pt, it, gl
        "restrições", "restricoes",  # pt
        "contraintes", "filtres",  # fr
        "einschränkungen", "einschrankungen", "grenzen", "zensur", "uneingeschränkt", "uneingeschrankt",  # de
        "restrizioni", "limiti", "filtri",  # it
        "beperkingen", "grenzen",  # nl
        "ograniczeń", "ograniczen", "filtrów", "filtrow",  # pl
        "ограничений", "ограничения", "фильтров", "цензуры",  # ru
        "обмежень",  # uk
        "begränsningar", "begransningar", "begrensninger", "begrænsninger",  # sv, no, da
        "rajoituksia", "rajoituksetta",  # fi
        "omezení", "omezeni",  # cs
        "restricții", "restrictii",  # ro
        "περιορισμούς",  # el
        "kısıtlama", "kisitlama", "sınırsız", "sinirsiz", "filtresiz",  # tr
        "قيود",  # ar
        "הגבלות", "מגבלות",  # he
        "प्रतिबंध", "सीमा",  # hi
        "batasan", "pembatasan",  # id
        
        "vikwazo",  # sw
        "limitasyon",  # tl
        "murrizketarik", "mugarik",  # eu
        "korlátozás", "korlatozas",  # hu
    ),
    "qxrole": (
        "pretend", "pretending", "roleplay", "role-play", "persona", "jailbreak", "jailbroken", "godmode", "impersonate",
        "finge", "fingir", "finja", "finjas",  # es, pt
        "prétends", "pretends", "incarne",  # fr
        "vorgeben", "verkörpere",  # de
        "fingi", "fingiti", "impersona",  # it
        "udawaj", "wciel",  # pl
        "притворись", "притворитесь", "представь", "представьте",  # ru
        "прикинься", "уяви",  # uk
        "låtsas", "latsas", 
        
        "teeskentele", "esitä", "esita",  # fi
        "předstírej", "predstirej",  # cs
        "prefă-te", "prefa-te",  # ro
        "προσποιήσου",  # el
        "davran",  # tr
        "تظاهر",  # ar
        "העמד", "התחזה",  # he
        "नाटक",  # hi
        "berpura-pura",  # id
        "vờ",  # vi
        "jifanya",  # sw
        "magpanggap",  # tl
        "itxurak",   # eu
        "tettesd",  # hu
    ),
}

# Terms of scripts written without spaces (Chinese, Japanese, Thai, Korean phrases), found by
# substring; only scanned when the view has characters of those scripts.
_SUBSTRINGS: dict[str, tuple[str, ...]] = {
    "qxignore": ("忽略", "无视", "無視", "忘记", "忘記", "忘れ", "ละเว้น", "เพิกเฉย", "ลืม", "무시", "잊어"),
    "qxearlier": ("之前", "先前", "以前", "上述", "以上", "前の", "これまで", "ก่อนหน้า", "이전", "위의"),
    "qxrules": ("指令", "指示", "说明", "規則", "规则", "命令", "คำสั่ง", "กฎ", "지시", "규칙", "지침"),
    "qxsystem": ("系统提示", "系統提示", "系统", "システム", "プロンプト", "ระบบ", "시스템", "프롬프트"),
    "qxshow": ("显示", "顯示", "输出", "輸出", "打印", "重复", "告诉我", "表示", "見せ", "教えて", "แสดง", "보여", "출력", "알려"),
    "qxnolimit": ("没有限制", "無限制", "无限制", "不受限制", "制限なし", "制限のない", "ไม่มีข้อจำกัด", "제한 없는", "제한없는"),
    "qxrole": ("假装", "扮演", "现在你是", "ふりをし", "なりきっ", "แกล้ง", "สวมบทบาท", "척해", "역할"),
}

_INDEX: dict[str, str] = {}
for _concept, _forms in _WORDS.items():
    for _form in _forms:
        _INDEX.setdefault(_form, _concept)
_STRIP = ".,!?;:\"'()[]{}«»¡¿…“”‘’`*_-—–/\\|<>"
_SPACELESS_HEAD, _SPACELESS_TAIL = 1024, 512
_SPACELESS_FROM = "\u0e00"  # Thai and everything above (CJK, kana, Hangul) may be written without spaces


def concepts(folded: str) -> tuple[str, ...]:
    """The :data:`CONCEPTS` markers of the ideas ``folded`` (lower-cased text) uses, in order."""
    found: set[str] = set()
    for concept in map(_INDEX.get, (w.strip(_STRIP) for w in folded.split())):
        if concept is not None:
            found.add(concept)
    if not folded.isascii() and max(folded) >= _SPACELESS_FROM:
        # Each term is a scan of the text: the opening and the end, where an order sits, are read.
        window = folded if len(folded) <= _SPACELESS_HEAD + _SPACELESS_TAIL else (
            folded[:_SPACELESS_HEAD] + "\n" + folded[-_SPACELESS_TAIL:])
        for concept, terms in _SUBSTRINGS.items():
            if concept not in found and any(term in window for term in terms):
                found.add(concept)
    return tuple(c for c in CONCEPTS if c in found)
