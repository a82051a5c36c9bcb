"""Word lists the offline judge and the quote check read text with, in English, German, Spanish, French, Portuguese
and Italian: function words, negations, number words, units, months, refusals, hedges and injection cues.

All entries are casefolded. Lists, not models: they are what makes the local judge a heuristic, and they are kept
here so that every rule reads the same words.
"""

from __future__ import annotations

import re

LANGUAGES = ("en", "de", "es", "fr", "pt", "it")
"""Languages the lists cover; the snowball stemmer name of each is in STEMMER_NAMES."""
STEMMER_NAMES = {"en": "english", "de": "german", "es": "spanish", "fr": "french", "pt": "portuguese",
                 "it": "italian"}

STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("""
a about above after again all also am an and any are as at be been before being below between both but by can
could did do does doing down during each few for from further had has have having he her here hers him his how i
if in into is it its itself just me more most my of off on once only or other our out over own same she should so
some such than that the their them then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yes may might must shall let get got
i'm i've you're you've it's there's that's what's let's they're we're one's per via within upon any each every
""".split()),
    "de": frozenset("""
der die das den dem des ein eine einen einem einer eines und oder aber auch als am an auf aus bei bis da damit dann
dass daß durch für gegen hat haben hatte ich ihr ihre im in ist ja kann können man mit muss müssen nach noch nur ob
sich sie sind so über um unter vom von vor war waren was weil wenn werden wird wie wir zu zum zur es er sein seine
diese dieser dieses jede jeder jedes dort hier bitte sollte sollten soll darf dürfen mehr sehr wo wer welche
""".split()),
    "es": frozenset("""
el la los las un una unos unas y o pero al del de en con por para que se su sus es son está están fue ser como
más muy ya le les lo me mi te tu nos este esta estos estas ese esa eso puede pueden debe deben hay sí si cuando
donde quien cual cada todo todos también hasta desde sobre entre usted ustedes
""".split()),
    "fr": frozenset("""
le la les un une des du de d l et ou mais à au aux en dans par pour sur avec que qui se sa son ses est sont été
être a ont avoir comme plus très il elle ils elles on nous vous je tu ce cet cette ces cela peut peuvent doit
doivent y si quand où chaque tout tous aussi entre depuis leur leurs votre vos
""".split()),
    "pt": frozenset("""
o a os as um uma uns umas e ou mas ao aos do da dos das de em no na nos nas com por para que se seu sua seus suas
é são foi ser estar está estão como mais muito já lhe me te você vocês este esta estes estas esse essa isso pode
podem deve devem há sim quando onde cada todo todos também até desde sobre entre pelo pela
""".split()),
    "it": frozenset("""
il lo la i gli le un uno una e o ma al allo alla ai agli alle del dello della dei degli delle di da in con su per
che si suo sua suoi sue è sono stato essere come più molto già gli mi ti ci vi questo questa questi queste quello
quella può possono deve devono c'è sì se quando dove ogni tutto tutti anche fino tra fra sul sulla nel nella
""".split()),
}
"""Function words per language; never content, never evidence."""

NEGATIONS = frozenset("""
not no never none nobody nothing nowhere neither nor cannot can't won't don't doesn't didn't isn't aren't wasn't
weren't shouldn't couldn't wouldn't mustn't hasn't haven't hadn't n't without
nicht kein keine keinen keinem keiner keines nie niemals weder ohne
nunca jamás ningún ninguna ninguno tampoco sin
ne n' pas jamais aucun aucune sans
não nem nenhum nenhuma sem
non mai nessun nessuna nessuno senza
refused rejected prohibited forbidden banned excluded forfeited waived denied declined unavailable impossible
verboten untersagt ausgeschlossen prohibido excluido rechazado interdit exclu refusé proibido excluído recusado
vietato escluso rifiutato
""".split())
"""Words that flip a statement's truth, and predicates that carry a negation ("refused" is "not accepted").
("no" doubles as Spanish and Italian "not".)"""
NARROW_NEGATIONS = frozenset("without ohne sin sans sem senza zonder".split())
"""Negations whose scope is the noun phrase after them, not their clause (text._narrow_scope)."""
NOT_NEGATIONS = re.compile(
    r"\b(?:no|not) (?:later|earlier|sooner|more|less|fewer|longer than|older|younger) than\b|\bnot only\b|"
    r"\bno matter\b|\bnicht (?:später|früher|mehr|weniger) als\b|\bno (?:más|menos) (?:tarde )?(?:de|que)\b|"
    r"\bpas plus (?:tard )?(?:que|de)\b|\bnão mais (?:tarde )?(?:de|que|do que)\b|\bnon oltre\b|"
    r"\bnon più (?:tardi )?di\b")
"""Bounds that read like negations but are not: "no later than six weeks" is a deadline, not a denial."""
NEGATION_PHRASES = re.compile(r"\b(?:no longer|not any ?more|nicht mehr|ya no|ne plus|não mais|non più|no más)\b")
"""Multi-word negations that also say a fact changed: "no longer included". Their negation word ("no", "nicht") is
counted once, as a word (counting the phrase as well made "no longer" read as no negation at all); the phrase marks
the sentence as newer than one it contradicts (ragpulse.judges.evidence)."""

ANTONYMS = {
    "required": "optional", "mandatory": "optional", "included": "excluded", "allowed": "prohibited",
    "permitted": "prohibited", "forbidden": "allowed", "always": "never", "enabled": "disabled",
    "available": "unavailable", "free": "paid", "refundable": "non-refundable", "before": "after",
    "maximum": "minimum", "increase": "decrease", "more": "less", "earlier": "later", "inside": "outside",
    "obligatorisch": "optional", "erlaubt": "verboten", "obligatorio": "opcional", "permitido": "prohibido",
    "obligatoire": "facultatif", "autorisé": "interdit", "obrigatório": "opcional", "obbligatorio": "facoltativo",
    "consentito": "vietato",
}
"""Word pairs whose swap flips a statement (one direction listed; both are checked)."""

NUMBER_WORDS = {
    **dict(zip("zero one two three four five six seven eight nine ten eleven twelve".split(), range(13))),
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "thousand": 1000, "million": 1_000_000, "dozen": 12, "twice": 2,
    **dict(zip("null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf".split(), range(13))),
    "zwanzig": 20, "dreißig": 30, "hundert": 100, "tausend": 1000, "ein": 1, "eine": 1, "einen": 1,
    **dict(zip("cero uno dos tres cuatro cinco seis siete ocho nueve diez".split(), range(11))), "doce": 12,
    "veinte": 20, "treinta": 30, "cien": 100, "mil": 1000, "quince": 15,
    **dict(zip("zéro un deux trois quatre cinq six sept huit neuf dix onze douze".split(), range(13))),
    "vingt": 20, "trente": 30, "cent": 100, "quinze": 15,
    **dict(zip("zero um dois três quatro cinco seis sete oito nove dez onze doze".split(), range(13))),
    "duas": 2, "vinte": 20, "trinta": 30, "cem": 100, "quinze": 15,
    **dict(zip("zero uno due tre quattro cinque sei sette otto nove dieci undici dodici".split(), range(13))),
    "venti": 20, "trenta": 30, "cento": 100, "mille": 1000, "quindici": 15,
}
"""Spelled-out quantities, read as numbers ("three-year" is 3 years). Articles ("a", "un") are not numbers, nor are
"single", "double" and "triple", which name kinds far more often than counts ("single sign-on", "double-click")."""
NUMBER_WORDS.pop("un")  # French/Spanish article far more often than "one"
NUMBER_WORDS.pop("uno")
NUMBER_WORDS.pop("um")

UNITS = {
    **dict.fromkeys("second seconds sec secs s sekunde sekunden segundo segundos seconde secondes secondo secondi".split(), ("time", 1)),
    **dict.fromkeys("minute minutes min mins minuten minuto minutos minuti".split(), ("time", 60)),
    **dict.fromkeys("hour hours hr hrs h stunde stunden hora horas heure heures ora ore".split(), ("time", 3600)),
    **dict.fromkeys("day days tag tage tagen día días dia dias jour jours giorno giorni".split(), ("time", 86400)),
    **dict.fromkeys("week weeks woche wochen semana semanas semaine semaines settimana settimane".split(), ("time", 604800)),
    **dict.fromkeys("fortnight".split(), ("time", 1209600)),
    **dict.fromkeys("month months monat monate monaten mes meses mois mês mese mesi".split(), ("month", 1)),
    **dict.fromkeys("year years yr yrs jahr jahre jahren año años ans année années ano anos anno anni".split(), ("month", 12)),
    **dict.fromkeys("% percent prozent pourcent".split(), ("percent", 1)),
    **dict.fromkeys("$ usd dollar dollars".split(), ("usd", 1)),
    **dict.fromkeys("€ eur euro euros".split(), ("eur", 1)),
    **dict.fromkeys("£ gbp pound pounds".split(), ("gbp", 1)),
    **dict.fromkeys("kb kilobyte kilobytes".split(), ("bytes", 1e3)),
    **dict.fromkeys("mb megabyte megabytes".split(), ("bytes", 1e6)),
    **dict.fromkeys("gb gigabyte gigabytes".split(), ("bytes", 1e9)),
    **dict.fromkeys("tb terabyte terabytes".split(), ("bytes", 1e12)),
    **dict.fromkeys("mg milligram milligrams".split(), ("mass", 1e-3)),
    **dict.fromkeys("g gram grams gramm".split(), ("mass", 1)),
    **dict.fromkeys("kg kilogram kilograms kilo kilos".split(), ("mass", 1e3)),
    **dict.fromkeys("ml millilitre millilitres milliliter milliliters".split(), ("volume", 1e-3)),
    **dict.fromkeys("l litre litres liter liters".split(), ("volume", 1)),
    **dict.fromkeys("mm millimetre millimetres".split(), ("length", 1e-3)),
    **dict.fromkeys("cm centimetre centimetres".split(), ("length", 1e-2)),
    **dict.fromkeys("m metre metres meter meters".split(), ("length", 1)),
    **dict.fromkeys("km kilometre kilometres kilometer kilometers".split(), ("length", 1e3)),
    **dict.fromkeys("°c celsius".split(), ("celsius", 1)),
    **dict.fromkeys("°f fahrenheit".split(), ("fahrenheit", 1)),
    **dict.fromkeys("w watt watts".split(), ("power", 1)),
    **dict.fromkeys("kw kilowatt kilowatts".split(), ("power", 1e3)),
    **dict.fromkeys("v volt volts".split(), ("voltage", 1)),
    **dict.fromkeys("mah".split(), ("charge", 1)),
    **dict.fromkeys("x times mal veces fois vezes volte".split(), ("times", 1)),
    # CJK counters, read only right after a number ("30日"): see text._cjk_pieces
    **dict.fromkeys("日 天".split(), ("time", 86400)), "秒": ("time", 1), "分": ("time", 60), "年": ("month", 12),
    "円": ("jpy", 1),
}
"""Unit word -> (dimension, factor to a base unit): "2 weeks" equals "14 days"; "30 days" is not "30 hours"."""
CURRENCY_SIGNS = {"$": "usd", "€": "eur", "£": "gbp"}

MONTHS = {
    **dict.fromkeys(["january", "jan", "januar", "enero", "janvier", "janeiro", "gennaio"], 1),
    **dict.fromkeys(["february", "feb", "februar", "febrero", "février", "fevereiro", "febbraio"], 2),
    **dict.fromkeys(["march", "mar", "märz", "marzo", "mars", "março"], 3),
    **dict.fromkeys(["april", "apr", "abril", "avril", "aprile"], 4),
    **dict.fromkeys(["may", "mai", "mayo", "maio", "maggio"], 5),
    **dict.fromkeys(["june", "jun", "juni", "junio", "juin", "junho", "giugno"], 6),
    **dict.fromkeys(["july", "jul", "juli", "julio", "juillet", "julho", "luglio"], 7),
    **dict.fromkeys(["august", "aug", "agosto", "août"], 8),
    **dict.fromkeys(["september", "sep", "sept", "septiembre", "septembre", "setembro", "settembre"], 9),
    **dict.fromkeys(["october", "oct", "oktober", "octubre", "octobre", "outubro", "ottobre"], 10),
    **dict.fromkeys(["november", "nov", "noviembre", "novembre", "novembro"], 11),
    **dict.fromkeys(["december", "dec", "dezember", "diciembre", "décembre", "dezembro", "dicembre"], 12),
}
"""Month names -> month number. "May", "mar" and "mai" are read as months only when capitalised or beside a number."""
WEEKDAYS = {
    **dict.fromkeys(["monday", "montag", "lunes", "lundi", "segunda-feira", "lunedì"], 1),
    **dict.fromkeys(["tuesday", "dienstag", "martes", "mardi", "terça-feira", "martedì"], 2),
    **dict.fromkeys(["wednesday", "mittwoch", "miércoles", "mercredi", "quarta-feira", "mercoledì"], 3),
    **dict.fromkeys(["thursday", "donnerstag", "jueves", "jeudi", "quinta-feira", "giovedì"], 4),
    **dict.fromkeys(["friday", "freitag", "viernes", "vendredi", "sexta-feira", "venerdì"], 5),
    **dict.fromkeys(["saturday", "samstag", "sábado", "samedi", "sabato"], 6),
    **dict.fromkeys(["sunday", "sonntag", "domingo", "dimanche", "domenica"], 7),
}

_ALT = "|".join
REFUSALS = re.compile(_ALT((
    # English: said of the speaker, or of the sources; "The plan does not include SSO" is a claim, not a refusal.
    r"\b(?:i|we) (?:do not|don't|did not|didn't) (?:know|find|see|have)\b",
    r"\b(?:i'm|i am|we're|we are) (?:not (?:sure|certain|able)|unable|afraid)\b",
    r"\bnot (?:sure|certain)\b",
    r"\b(?:i|we) (?:\w+ )?(?:couldn't|could not|can't|cannot|can not|was unable to|were unable to|am unable to|"
    r"wasn't able to|am not able to|have not been able to|haven't been able to) (?:find|locate|answer|confirm|tell|"
    r"say|determine|help|verify|see|provide|give)\b",
    r"\b(?:couldn't|could not|can't|cannot|unable to|not able to|not possible to) (?:find|locate|answer|confirm|"
    r"determine|verify)\b",
    r"\b(?:doesn't|does not|don't|do not|didn't|did not) (?:mention|say|specify|describe|state|address|explain|"
    r"indicate)\b",
    r"\b(?:documentation|documents?|docs|context|sources?|passages?|manual|leaflet|excerpts?|materials?|faq|"
    r"knowledge base)\b[^.]{0,60}\b(?:doesn't|does not|don't|do not|didn't|did not) (?:cover|contain|include|list|"
    r"provide|give|have)\b",
    r"\b(?:no|not enough|insufficient) (?:information|details|mention|data)\b",
    r"\bnot (?:mentioned|specified|stated|documented|addressed|listed)\b",
    r"\b(?:don't|do not|doesn't|does not) have (?:any |enough )?(?:\w+ )?(?:information|details|data)\b",
    r"\b(?:isn't|is not|aren't|are not) (?:in|covered (?:in|by)|part of|included in) the (?:\w+ )?(?:documents?|"
    r"documentation|context|sources?|passages?|provided|materials?)\b",
    r"\b(?:documents?|documentation|context|sources?|passages?|materials?|manual|faq)\b[^.]{0,40}\b(?:silent|unclear)\b",
    r"\b(?:nothing|none of the)\b[^.]{0,60}\b(?:mentions?|says?|covers?|states?|specif\w*|address\w*|answers?)\b",
    r"\b(?:there is|there's|there are|i see|i found|we found) (?:nothing|no (?:\w+ )?(?:mention|information|details|"
    r"data))\b[^.]{0,60}\b(?:documents?|documentation|docs|context|sources?|passages?|materials?|manual|faq|"
    r"knowledge base|provided|available|retrieved)\b",
    r"\b(?:documents?|documentation|docs|context|sources?|passages?|materials?|manual|faq)\b[^.]{0,40}"
    r"\b(?:say|says|said|contain|contains|mention|mentions|cover|covers|give|gives) nothing\b",
    # German
    r"\b(?:ich|wir) (?:konnte|kann|können|konnten|habe|haben|weiß|wissen|finde|fand|fanden)\b[^.]{0,40}"
    r"\b(?:keine|nichts|nicht)\b",
    r"\b(?:konnte|kann|habe|fand|finde) ich\b[^.]{0,40}\b(?:keine|nichts|nicht)\b",
    r"\bkeine (?:\w+ )?(?:informationen|angaben|hinweise|daten|auskunft|auskünfte)\b",
    r"\bnicht (?:sicher|erwähnt|angegeben|beschrieben|dokumentiert|aufgeführt)\b",
    r"\b(?:dokumente?n?|unterlagen|quellen|dokumentation)\b[^.]{0,40}\b(?:nicht|keine)\b",
    # Spanish
    r"\bno (?:he |hemos |pude |pudimos )?(?:encontr\w*|encuentro|pude|puedo|podemos|sé|sabemos|tengo|tenemos|"
    r"dispongo|consta)\b",
    r"\bno (?:estoy|estamos) (?:segur\w+)\b",
    r"\b(?:no hay|sin) (?:\w+ )?(?:información|datos|detalles|menciones?)\b",
    r"\bno (?:se )?(?:menciona|especifica|indica|detalla|aparece)\b",
    # French
    r"\bje (?:ne |n')(?:sais|trouve|peux|suis|dispose)\b",
    r"\b(?:je n'ai|nous n'avons|n'ai) (?:pas|trouvé|aucune)\b",
    r"\bpas (?:d'information|de renseignement|de donnée|trouvé|sûr|certain|mentionné|précisé|indiqué)\w*\b",
    r"\baucune (?:\w+ )?(?:information|donnée|mention|précision)s?\b",
    r"\bne (?:mentionne|précise|indique|dit)\b",
    # Portuguese
    r"\bnão (?:encontr\w*|consegui\w*|sei|sabemos|tenho|temos|estou|foi possível (?:encontrar|confirmar)|menciona|"
    r"especifica|indica|consta|posso)\b",
    r"\bnão há (?:\w+ )?(?:informação|informações|dados|detalhes|menção)\b",
    r"\bsem (?:\w+ )?(?:informação|informações|dados|detalhes)\b",
    r"\bnenhuma (?:\w+ )?(?:informação|menção)\b",
    # Italian
    r"\bnon (?:ho |abbiamo )?(?:trovat\w*|riesco|sono (?:sicur\w|in grado)|so|sappiamo|posso|menziona|specifica|"
    r"indica|risulta|dispongo)\b",
    r"\bnessuna (?:\w+ )?(?:informazione|menzione|indicazione)\b",
    r"\b(?:non ci sono|mancano) (?:\w+ )?(?:informazioni|dati|dettagli)\b",
    # Dutch
    r"\b(?:ik|wij|we) (?:kon|kan|konden|kunnen|heb|hebben|vond|vonden|weet|weten)\b[^.]{0,50}\b(?:geen|niets|niet)\b",
    r"\bgeen (?:\w+ )?(?:informatie|gegevens|details|vermelding)\b", r"\bniet (?:vermeld|genoemd|beschreven|gedocumenteerd)\b",
    r"\b(?:staat|staan|vind ik|vond ik) (?:er |daar |hier )?(?:niets|niet|geen)\b[^.]{0,40}\b(?:documenten|document|"
    r"bronnen|context|handleiding|informatie)\b",
    # Japanese, Chinese, Korean (no word boundaries in these scripts)
    r"見つかりません|見当たりません|記載(?:されていません|がありません|はありません)|情報(?:は|が)(?:ありません|ない)|"
    r"(?:わかりません|分かりません)|言及(?:されていません|がありません)",
    r"没有找到|未找到|找不到|没有(?:关于|相关|提到|提及)|未(?:提及|提到)|无法(?:找到|确定|回答)|不清楚",
    r"찾을 수 없|정보가 없|나와 있지 않|언급되어 있지 않",
)))
"""Phrases that admit the context lacks the answer. A sentence holding one declines, unless a guess follows."""

GUESS_TURN = re.compile(_ALT((
    r"\b(?:but|though|although|however|still|yet|that said|nevertheless)\b",
    r"\b(?:aber|jedoch|allerdings|trotzdem|doch)\b",
    r"\b(?:pero|aunque|sin embargo|no obstante)\b",
    r"\b(?:mais|cependant|pourtant|toutefois|néanmoins)\b",
    r"\b(?:mas|porém|contudo|embora|entretanto|no entanto)\b",
    r"\b(?:ma|però|tuttavia|comunque|sebbene)\b",
)))
"""Connectives after which a refusal turns into a guess: "I couldn't find it, but it's usually 1 GB"."""

HEDGES = re.compile(_ALT((
    r"\b(?:i think|i believe|i guess|i assume|i suspect|probably|likely|usually|typically|generally|normally|"
    r"most likely|presumably|as far as i know|it may be|it might be|my guess|in most cases)\b",
    r"\b(?:vermutlich|wahrscheinlich|normalerweise|üblicherweise|meistens|in der regel|ich glaube|ich denke)\b",
    r"\b(?:probablemente|normalmente|generalmente|creo que|supongo que|suele|por lo general)\b",
    r"\b(?:probablement|généralement|normalement|habituellement|je pense|je crois|sans doute)\b",
    r"\b(?:provavelmente|geralmente|normalmente|acho que|creio que|costuma)\b",
    r"\b(?:probabilmente|di solito|solitamente|generalmente|normalmente|penso che|credo che)\b",
)))
"""Words that mark a guess. A hedged statement is still a claim, and is judged."""

REFERRALS = re.compile(_ALT((
    r"\b(?:ask|consult|contact|check with|speak (?:to|with)|talk to|reach out|get in touch|refer to|call|email)\b",
    r"\b(?:should|will|would|might|may|can|could) be able to (?:help|tell|confirm|advise|assist)\b",
    r"\b(?:right|best|correct) (?:place|person|people|team|contact) (?:to|for)\b",
    r"\b(?:wenden sie sich|kontaktieren|fragen sie|erkundigen sie sich)\b",
    r"\b(?:consulte|contacte|póngase en contacto|pregunte|comuníquese)\b",
    r"\b(?:contacter|consulter|contactez|consultez|adressez-vous|renseignez-vous)\b",
    r"\b(?:contate|contacte|entre em contato|fale com|sugiro)\b",
    r"\b(?:contatti|contattare|consulti|rivolgiti|rivolgersi|si rivolga|chieda)\b",
)))
"""Sentences that send the user elsewhere: beside a refusal they belong to it, not to the claims (searched
anywhere in the sentence, so only ever applied when the answer also declines)."""

ANAPHORA = frozenset("""
it its they them their this these those that such he she his her both either each there
es er sie dies diese dieser dieses dort ello esto esta estos estas ese esa él ella ellos ellas
il elle ils elles ce cet cette ces cela ceci ele ela eles elas isso isto esse essa esso essa questo questa
""".split())
"""First words that refer back to the previous sentence: only then do two sentences count as one passage."""

AFFIRMATIONS = frozenset("yes yeah yep correct right true indeed ja sí si oui sim sì certo".split())
"""A bare answer word that asserts the question's proposition ("Yes, it does.")."""
DENIALS = frozenset("no nope nein non não".split())
"""A bare answer word that denies the question's proposition."""
QUESTION_PHRASES = re.compile(r"\bhow (?:long|many|much|often|far|old|big|large|soon|late|early|fast)\b|"
                              r"\bwie (?:lange|viele?|oft|weit|alt|groß)\b|\bcu[aá]nt[oa]s?\b|\bcombien\b|"
                              r"\bquant[oa]s?\b|\bhoe (?:lang|veel|vaak|ver|oud)\b", re.IGNORECASE)
"""Question phrases that ask for a figure: "How long is the warranty?" is about the warranty, not about "long"."""
BARE_DENIALS = frozenset(["not yet", "not really", "noch nicht", "todavía no", "pas encore", "ainda não", "non ancora",
                          "nog niet"])
"""Two-word answers that deny the question's proposition ("Not yet.")."""
BARE_ANSWERS = AFFIRMATIONS | DENIALS | BARE_DENIALS | {"of course", "absolutely", "certainly", "sure"}
"""A sentence made of one of these answers the question; followed by more sentences, those say what it claims."""
FRAMING = re.compile(r"(?:it|that|this) (?:depends|varies)(?: on\b.*)?|here(?:'s| is| are) (?:how|what)\b.*|"
                     r"(?:es|das) kommt darauf an\b.*|depende\b.*|ça dépend\b.*|dipende\b.*|het hangt ervan af\b.*")
"""Sentences that frame an answer and assert nothing checkable ("It depends on what you want to reset.")."""

INJECTION = re.compile(_ALT((
    r"\bignore (?:all |any |the )?(?:previous|prior|above|earlier|preceding|other) (?:instructions?|prompts?|rules?|"
    r"context|messages?)\b",
    r"\bdisregard (?:all |any |the )?(?:previous|prior|above|earlier|other)\b",
    r"\b(?:the |an )?(?:assistant|ai|chatbot|bot|model|llm|language model)s? (?:must|should|shall|needs? to|is to|"
    r"will) (?:always |now |only )?(?:say|tell|respond|reply|answer|state|claim|recommend|inform|mention|direct|"
    r"include|output|ignore|refer|advise|confirm)\b",
    r"\b(?:if you are|as an?) (?:an? )?(?:ai|assistant|language model|llm|chatbot)\b",
    r"\b(?:respond|reply|answer) (?:only )?with\b",
    r"\b(?:when|if) (?:asked|users? ask|someone asks)\b[^.]{0,80}\b(?:say|tell|answer|respond|reply)\b",
    r"\btell (?:the )?users? (?:that|to)\b",
    r"\bnew instructions?\b", r"\bsystem (?:prompt|message|override|note)\b",
    r"^\s*(?:system|assistant|user)\s*:", r"<\|?(?:system|im_start|im_end|assistant|user)\|?>",
    r"\[(?:system|inst|/inst)\]", r"<!--", r"-->", r"\bdo not (?:mention|reveal|tell)\b[^.]{0,40}\b(?:user|this)\b",
    r"\bignoriere (?:alle )?(?:vorherigen|bisherigen) (?:anweisungen|instruktionen)\b",
    r"\bder assistent (?:muss|soll)\b",
    r"\bignora (?:todas |tutte )?(?:las |le )?(?:instrucciones|istruzioni) (?:anteriores|precedenti)\b",
    r"\bel asistente (?:debe|tiene que)\b", r"\bl'assistente (?:deve)\b",
    r"\bignore[zr]? (?:toutes )?les instructions (?:précédentes|antérieures)\b", r"\bl'assistant doit\b",
    r"\bignore (?:todas )?as instruções anteriores\b", r"\bo assistente deve\b",
    r"\b(?:function_call|tool_call|tool_use)\b", r'"(?:name|arguments)"\s*:',
)))
"""Text addressed to a model rather than to a reader: instructions inside a retrieved document are not evidence."""
