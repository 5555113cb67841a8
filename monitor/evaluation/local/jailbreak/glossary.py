"""The few ideas an override or extraction attempt is built from, in many languages.

Public attack sets are mostly English, so the n-gram weights know "ignore all previous
instructions" well and its Basque or Tagalog wording hardly at all. :func:`concepts` names the
ideas a text uses — set aside, earlier, instructions, the system prompt, show it, without limits,
a new role — as one marker word each, whatever the language; the detector adds the markers to the
text it reads, so what the model learns of an idea in one language carries to the others. The
markers say nothing alone: a benign "ignore my last message" in Turkish uses two of them, and the
model weighs them as it learned from benign and attack texts alike.

Cost: the first 1.5 KiB and last half KiB of the text are read: a dictionary look-up per word,
and a substring scan only for the phrases whose first word (the terms of scripts without spaces
or with joined particles: whose first character) the text has.
"""

from __future__ import annotations

from monitor.evaluation.local.normalise import fold, without_marks
from monitor.evaluation.local.text import bounded_view

__all__ = ["CONCEPTS", "concepts"]

# Marker words: letters no language here writes together, so their n-grams are their own.
CONCEPTS = ("qxignore", "qxearlier", "qxrules", "qxsystem", "qxshow", "qxnolimit", "qxrole", "qxverbatim", "qxsecret",
            "qxethics", "qxrefuse", "qxfromnow", "qxadmin")

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
        "sebelumnya",  # id
        "awali", "zilizopita",  # sw
        "naunang",  # tl
        "aurreko", "aurreko", "hasierako",  # eu
        "anteriors",  # ca
        "korábbi", "korabbi", "előző", "elozo",  # hu
    ),
    "qxrules": (
        "instructions", "instruction", "rules", "guidelines", "directives", "commands", "restrictions",
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
        "mfumo",  # sw
        "sistema",  # tl
        "sistemaren", "sistemako",  # eu
        "rendszer", "rendszerpromptot",  # hu
    ),
    "qxshow": (
        "reveal", "show", "print", "display", "output", "repeat", "recite", "disclose", "dump",
        "muestra", "muéstrame", "muestrame", "revela", "revélame", "imprime", "repite", "enseña",  # es
        "mostre", "mostra", "revele", "imprima", "repita",  # pt
        "montre", "montrez", "révèle", "révélez", "revele", "affiche", "affichez", "répète", "repete", "imprime",  # fr
        "zeig", "zeige", "zeigen", "verrate", "wiederhole", "drucke", "ausgeben",  # de
        "mostrami", "rivela", "stampa", "ripeti", "mostra",  # it
        "toon", "onthul", "herhaal",  # nl
        "pokaż", "pokaz", "ujawnij", "wypisz", "powtórz", "powtorz",  # pl
        "покажи", "покажите", "раскрой", "выведи", "повтори",  # ru
        "покажи", "розкрий", "виведи",  # uk
        "avslöja", "upprepa",  # sv
        "afslør", "avslør", "gentag", "gjenta",  # da, no
        "näytä", "nayta", "paljasta", "toista",  # fi
        "ukaž", "ukaz", "vypiš", "vypis", "zopakuj",  # cs
        "arată", "arata", "dezvăluie",  # ro
        "δείξε", "αποκάλυψε",  # el
        "göster", "goster", "yazdır", "yazdir", "tekrarla",  # tr
        "اعرض", "أظهر", "اكشف", "اطبع",  # ar
        "הצג", "הראה", "חשוף",  # he
        "दिखाओ", "दिखाएं", "बताओ", "प्रकट",  # hi
        "tampilkan", "tunjukkan", "ungkapkan", "ulangi",  # id
        "onyesha", "fichua", "rudia",  # sw
        "ipakita", "ibunyag", "ulitin",  # tl
        "erakutsi", "erakutsidazu", "esaidazu",  # eu
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
        "jifanya",  # sw
        "magpanggap",  # tl
        "itxurak",  # eu
        "tettesd",  # hu
    ),
    "qxverbatim": (
        "verbatim", "word-for-word", "unabridged", "textualmente", "literalmente",
        "textuellement", "wörtlich", "wortwörtlich", "wortwortlich", "letteralmente", "testualmente", "woordelijk",
        "dosłownie", "doslownie", "дословно", "дослівно", "ordagrant", "ordret", "sanatarkasti", "doslova",
        "αυτολεξεί", "kelimesi", "harfiyen", "حرفيا", "حرفيًا", "מילה", "शब्दशः", "persis", "neno", "eksakto", "hitzez",
        "szó",
    ),
    "qxsecret": (
        "password", "passwords", "secret", "secrets", "confidential", "credentials", "api-key", "apikey",
        "contraseña", "contrasena", "secreto", "secreta", "oculto", "ocultas", "senha", "segredo", "oculta",
        "secrète", "secrete", "cachées", "cachees", "passwort", "kennwort", "geheim", "geheime", "versteckte",
        "segreto", "segreta", "nascoste", "wachtwoord", "geheime", "hasło", "haslo", "tajne", "ukryte",
        "пароль", "секрет", "секретный", "скрытые", "скрытый", "lösenord", "losenord", "hemlig", "adgangskode",
        "salasana", "salainen", "heslo", "tajné", "parola", "secretă", "κωδικός", "μυστικό", "şifre", "sifre", "gizli",
        "سري", "السرية", "סיסמה", "סודי", "पासवर्ड", "गुप्त", "rahasia", "nenosiri", "lihim",
        "pasahitza", "sekretua", "jelszó", "jelszo", "titkos",
    ),
    "qxethics": (
        "ethical", "ethics", "moral", "morals", "morality", "amoral", "unethical", "immoral",
        "ética", "etica", "éticas", "eticas", "morales", "moralidad", "éticos", "eticos",
        "éthique", "ethique", "morale", "ethik", "ethischen", "moralischen", "moral", "etiche", "morali",
        "ethiek", "morele", "etyki", "moralności", "moralnosci", "этики", "этических", "морали", "моральных",
        "етики", "моралі", "etik", "moral", "etiikka", "moraali", "etiky", "morálky", "ηθική", "ηθικής",
        "ahlak", "ahlaki", "etik", "أخلاقية", "الأخلاق", "أخلاق", "מוסר", "אתיקה", "नैतिक", "नैतिकता",
        "etika", "moral", "maadili", "etika", "moralidad", "etika", "morala", "erkölcsi", "etikai",
    ),
    "qxrefuse": (
        "refuse", "refuses", "refusing", "refusal", "refusals", "decline", "declines", "denying",
        "niegues", "negarte", "rechaces", "rechazar", "recuses", "recusar", "recusa", "refuses", "refuser", "refus",
        "ablehnen", "verweigern", "verweigerst", "lehnst", "rifiuti", "rifiutare", "rifiutarti", "weiger", "weigeren",
        "odmawiaj", "odmawiać", "odmawiac", "odmowy", "отказывай", "отказывать", "отказываешься", "отказа",
        "відмовляй", "vägra", "vagra", "nekt", "afslå", "kieltäydy", "kieltaydy", "odmítej", "odmitej", "refuza",
        "αρνείσαι", "reddetme", "reddetmeden", "ترفض", "رفض", "תסרב", "לסרב", "इनकार", "menolak", "usikatae",
        "kukataa", "tumanggi", "ukatu", "uko", "megtagadni", "tagadd",
    ),
    "qxadmin": (
        "admin", "administrator", "sysadmin", "superuser", "sudo", "override",
        "administrador", "administrateur", "administratorin", "amministratore", "beheerder", "administratora",
        "администратор", "администратора", "адміністратор", "administratör", "järjestelmänvalvoja", "správce",
        "διαχειριστής", "yönetici", "yonetici", "المسؤول", "مسؤول", "המנהל", "מנהל", "व्यवस्थापक", "msimamizi",
        "kudeatzailea", "rendszergazda",
    ),
}

# Several words said as one idea: found by substring in the text with spaces around it.
_PHRASES: dict[str, tuple[str, ...]] = {
    "qxverbatim": ("word for word", "palabra por palabra", "mot pour mot", "parola per parola", "woord voor woord",
                   "słowo w słowo", "слово в слово", "ord for ord", "sana sanalta", "kelimesi kelimesine", "kata demi kata",
                   "salita por salita", "hitzez hitz"),
    "qxsecret": ("api key", "mot de passe", "kata sandi"),
    "qxfromnow": ("from now on", "desde ahora", "a partir de ahora", "de ahora en adelante", "a partir de agora",
                  "daqui em diante", "à partir de maintenant", "a partir de maintenant", "désormais", "desormais",
                  "ab jetzt", "von nun an", "ab sofort", "d'ora in poi", "da ora in poi", "vanaf nu", "od teraz",
                  "od tej chwili", "с этого момента", "отныне", "з цього моменту", "från och med nu", "fra nu af",
                  "fra nå av", "tästä lähtien", "od teď", "od nynějška", "de acum înainte", "από τώρα και στο εξής",
                  "bundan sonra", "bundan böyle", "من الآن فصاعدا", "من الآن فصاعدًا", "מעכשיו", "अब से",
                  "mulai sekarang", "mulai saat ini", "từ bây giờ", "kuanzia sasa", "mula ngayon", "hemendik aurrera",
                  "mostantól"),
    "qxignore": ("don't follow", "do not follow", "no sigas", "não siga", "ne suivez pas", "nicht befolgen",
                 "yok say", "bỏ qua", "huwag sundin"),
    "qxrules": ("hướng dẫn", "quy tắc"),
    "qxsystem": ("hệ thống",),
    "qxnolimit": ("no limits", "without limits", "sin límites", "sin limites", "sin restricciones", "sem restrições",
                  "sans restrictions", "sans limites", "ohne einschränkungen", "ohne grenzen", "senza restrizioni",
                  "senza limiti", "zonder beperkingen", "bez ograniczeń", "без ограничений", "без обмежень",
                  "utan begränsningar", "uden begrænsninger", "uten begrensninger", "ilman rajoituksia", "bez omezení",
                  "fără restricții", "χωρίς περιορισμούς", "bez omezeni", "không có giới hạn", "không giới hạn",
                  "tanpa batasan", "bila vikwazo", "walang limitasyon", "mugarik gabe", "korlátozások nélkül"),
    "qxshow": ("tiết lộ", "hiển thị"),
}

# Terms of scripts written without spaces (Chinese, Japanese, Thai, Korean phrases) and of
# scripts that join particles and pronouns to the word (Arabic, Hebrew), found by substring; only
# scanned when the view has characters of those scripts.
_SUBSTRINGS: dict[str, tuple[str, ...]] = {
    "qxignore": ("忽略", "无视", "無視", "忘记", "忘記", "忘れ", "ละเว้น", "เพิกเฉย", "ลืม", "무시", "잊어", "تجاهل", "התעלם"),
    "qxearlier": ("之前", "先前", "以前", "上述", "以上", "最初", "原始", "前の", "これまで", "最初の", "ก่อนหน้า", "이전", "위의", "처음",
                  "السابق", "الأصلي", "הקודמ", "המקורי"),
    "qxrules": ("指令", "指示", "说明", "規則", "规则", "命令", "准则", "準則", "คำสั่ง", "กฎ", "지시", "규칙", "지침",
                "تعليمات", "قواعد", "הוראות", "הנחיות"),
    "qxsystem": ("系统提示", "系統提示", "提示词", "系统", "システム", "プロンプト", "ระบบ", "시스템", "프롬프트", "النظام", "מערכת"),
    "qxshow": ("显示", "顯示", "输出", "輸出", "打印", "重复", "告诉我", "发给我", "表示", "見せ", "教えて", "出力", "แสดง", "보여", "출력",
               "알려", "اعرض", "أظهر", "اكتب", "הצג", "הראה"),
    "qxnolimit": ("没有限制", "無限制", "无限制", "不受限制", "无限制地", "过滤器已关闭", "制限なし", "制限のない", "ไม่มีข้อจำกัด",
                  "제한 없는", "제한없는", "بدون قيود", "ללא הגבלות"),
    "qxrole": ("假装", "扮演", "ふりをし", "なりきっ", "แกล้ง", "สวมบทบาท", "척해", "역할", "تظاهر", "העמד פנים"),
    "qxverbatim": ("逐字", "原文", "一字不差", "そのまま", "一字一句", "ทุกคำ", "그대로", "حرفي", "מילה במילה"),
    "qxsecret": ("密码", "密碼", "秘密", "机密", "パスワード", "비밀번호", "รหัสผ่าน", "كلمة المرور", "סיסמ"),
    "qxethics": ("道德", "伦理", "倫理", "道徳", "윤리", "도덕", "จริยธรรม", "أخلاق", "מוסר"),
    "qxrefuse": ("拒绝", "拒絕", "拒否", "断ら", "거절", "거부", "ปฏิเสธ", "ترفض", "לסרב"),
    "qxfromnow": ("从现在起", "從現在起", "从现在开始", "今から", "これから", "지금부터", "ต่อจากนี้"),
    "qxadmin": ("管理员", "管理員", "管理者", "관리자", "ผู้ดูแล", "المسؤول", "מנהל"),
}


def _as_read(term: str) -> set[str]:
    """The forms ``term`` takes in the text the detector reads: after ``fold()`` (NFKC: Thai's
    sara am splits in two) and without diacritics."""
    return {without_marks(term.lower()), without_marks(fold(term).text)} - {""}


# A word may name two ideas ("restrictions": rules, and their absence): it marks both.
_INDEX: dict[str, tuple[str, ...]] = {}
for _concept, _forms in _WORDS.items():
    for _form in _forms:
        for _key in _as_read(_form):
            if _concept not in _INDEX.get(_key, ()):
                _INDEX[_key] = _INDEX.get(_key, ()) + (_concept,)
# Phrases by their first word: only those whose first word the text has are looked for.
_PHRASES_BY_FIRST: dict[str, list[tuple[str, str]]] = {}
for _concept, _phrases in _PHRASES.items():
    for _phrase in _phrases:
        for _plain in _as_read(_phrase):
            _PHRASES_BY_FIRST.setdefault(_plain.split()[0], []).append((_concept, f" {_plain} "))
# Terms by their first character, likewise.
_TERMS_BY_FIRST: dict[str, list[tuple[str, str]]] = {}
for _concept, _terms in _SUBSTRINGS.items():
    for _term in _terms:
        for _plain in _as_read(_term):
            _TERMS_BY_FIRST.setdefault(_plain[0], []).append((_concept, _plain))
_STRIP = ".,!?;:\"'()[]{}«»¡¿…“”‘’`*_-—–/\\|<>"
_HEAD, _TAIL = 1536, 512
_JOINED_FROM = "\u0590"  # Hebrew, Arabic, Thai and everything above (CJK, kana, Hangul)


def concepts(text: str) -> tuple[str, ...]:
    """The :data:`CONCEPTS` markers of the ideas ``text`` (folded: lower case, single spaces,
    diacritics removed with :func:`~monitor.evaluation.local.normalise.without_marks`) uses.
    Only the opening and the end of a long text are read: where an order sits."""
    text = bounded_view(text, _HEAD, _TAIL)
    found: set[str] = set()
    words = [w.strip(_STRIP) for w in text.split()]
    for concepts_of_word in filter(None, map(_INDEX.get, words)):
        found.update(concepts_of_word)
    firsts = _PHRASES_BY_FIRST.keys() & set(words)
    if firsts:
        padded = f" {' '.join(words)} "
        found.update(concept for first in firsts for concept, phrase in _PHRASES_BY_FIRST[first] if phrase in padded)
    if not text.isascii() and max(text) >= _JOINED_FROM:
        for first in _TERMS_BY_FIRST.keys() & set(text):
            found.update(concept for concept, term in _TERMS_BY_FIRST[first] if term in text)
    return tuple(c for c in CONCEPTS if c in found)
