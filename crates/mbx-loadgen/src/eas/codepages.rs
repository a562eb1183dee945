//! The code pages of MS-ASWBXML (Exchange ActiveSync's WBXML vocabulary): for each page its
//! number, its XML namespace and its tags (token and name), as one table from which both the
//! [`Tag`] constants (`airsync::Sync`, `folderhierarchy::FolderSync`, ...) and the lookups by
//! name are made.
//!
//! Tokens are MS-ASWBXML's (revision 8.0, EAS 14.1, and the EAS 16.x additions libwbxml knows:
//! AirSyncBase `Add`..`InstanceId`, Email2 `IsDraft`/`Bcc`/`Send`, ComposeMail `Forwardees`, the
//! Find page). Names are those libwbxml uses, so that our trees, its XML and SOGo's (which
//! encodes through libwbxml) agree; where they differ from the element names of MS-ASCAL or
//! MS-ASCNTC the token is what counts on the wire: Calendar `Attendee_Email` is MS-ASCAL's
//! `Email` inside `Attendee`, `Recurrence_Type` its `Type` inside `Recurrence`, Contacts
//! `BusinessCity` MS-ASCNTC's `BusinessAddressCity`. One name is MS-ASWBXML's rather than
//! libwbxml's (Settings 0x2B `RightsManagementInformation`).

use std::fmt;

/// One element's identity in WBXML: its code page and its token (0x05..=0x3F; the two high bits
/// of a tag byte are the content and attribute flags, 0x00..=0x04 are global tokens).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag {
    page: u8,
    token: u8,
}

impl Tag {
    /// The tag of `token` on code page `page`.
    pub const fn new(page: u8, token: u8) -> Tag {
        Tag { page, token }
    }

    /// Its code page.
    pub const fn page(self) -> u8 {
        self.page
    }

    /// Its token (without the content flag).
    pub const fn token(self) -> u8 {
        self.token
    }

    /// Its name, when the tables know it.
    pub fn name(self) -> Option<&'static str> {
        page_table(self.page)?
            .2
            .iter()
            .find(|(t, _)| *t == self.token)
            .map(|(_, n)| *n)
    }

    /// Its page's namespace (`AirSync`, `FolderHierarchy`, ...; in XML with a colon after it).
    pub fn namespace(self) -> Option<&'static str> {
        namespace(self.page)
    }

    /// The tag named `name` in the namespace `namespace` (with or without its trailing colon).
    pub fn by_name(namespace: &str, name: &str) -> Option<Tag> {
        let ns = namespace.strip_suffix(':').unwrap_or(namespace);
        let (page, _, tags) = PAGES.iter().find(|(_, n, _)| *n == ns)?;
        tags.iter()
            .find(|(_, n)| *n == name)
            .map(|(t, _)| Tag::new(*page, *t))
    }

    /// Whether libwbxml (and so SOGo) carries this element's content as OPAQUE bytes rather
    /// than a string: a message's MIME, conversation ids, pictures, rights-managed content.
    pub fn is_opaque(self) -> bool {
        OPAQUE.contains(&self)
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.namespace(), self.name()) {
            (Some(ns), Some(n)) => write!(f, "{ns}:{n}"),
            (Some(ns), None) => write!(f, "{ns}:0x{:02x}", self.token),
            _ => write!(f, "page{}:0x{:02x}", self.page, self.token),
        }
    }
}

/// The namespace of code page `page`.
pub fn namespace(page: u8) -> Option<&'static str> {
    page_table(page).map(|(_, ns, _)| *ns)
}

/// The code page of `namespace` (with or without its trailing colon).
pub fn page_of(namespace: &str) -> Option<u8> {
    let ns = namespace.strip_suffix(':').unwrap_or(namespace);
    PAGES.iter().find(|(_, n, _)| *n == ns).map(|(p, _, _)| *p)
}

type PageTable = (u8, &'static str, &'static [(u8, &'static str)]);

fn page_table(page: u8) -> Option<&'static PageTable> {
    PAGES.iter().find(|(p, _, _)| *p == page)
}

/// The tags whose content libwbxml encodes as OPAQUE (its `WBXML_TAG_OPTION_BINARY`).
const OPAQUE: &[Tag] = &[
    resolverecipients::Data,
    search::ConversationId,
    gal::Data,
    airsyncbase::Content,
    itemoperations::ConversationId,
    composemail::MIME,
    email2::ConversationId,
    email2::ConversationIndex,
];

macro_rules! code_pages {
    ($( $page:literal $module:ident $ns:literal {
        $( $name:ident = $tok:literal $(as $alias:literal)? ),* $(,)?
    } )*) => {
        $(
            #[doc = concat!("Code page ", stringify!($page), ", namespace `", $ns, ":`.")]
            #[allow(non_upper_case_globals, missing_docs)]
            pub mod $module {
                use super::Tag;
                /// The page's number.
                pub const PAGE: u8 = $page;
                /// The page's namespace (in XML with a colon after it).
                pub const NAMESPACE: &str = $ns;
                $( pub const $name: Tag = Tag::new($page, $tok); )*
                pub(super) const NAMES: &[(u8, &str)] =
                    &[ $( ($tok, code_pages!(@name $name $($alias)?)) ),* ];
            }
        )*
        /// Every page: number, namespace, tags.
        const PAGES: &[PageTable] = &[ $( ($page, $ns, $module::NAMES) ),* ];
    };
    (@name $name:ident) => { stringify!($name) };
    (@name $name:ident $alias:literal) => { $alias };
}

code_pages! {
    0 airsync "AirSync" {
        Sync = 0x05,
        Responses = 0x06,
        Add = 0x07,
        Change = 0x08,
        Delete = 0x09,
        Fetch = 0x0a,
        SyncKey = 0x0b,
        ClientId = 0x0c,
        ServerId = 0x0d,
        Status = 0x0e,
        Collection = 0x0f,
        Class = 0x10,
        Version = 0x11,
        CollectionId = 0x12,
        GetChanges = 0x13,
        MoreAvailable = 0x14,
        WindowSize = 0x15,
        Commands = 0x16,
        Options = 0x17,
        FilterType = 0x18,
        Truncation = 0x19,
        RTFTruncation = 0x1a,
        Conflict = 0x1b,
        Collections = 0x1c,
        ApplicationData = 0x1d,
        DeletesAsMoves = 0x1e,
        NotifyGUID = 0x1f,
        Supported = 0x20,
        SoftDelete = 0x21,
        MIMESupport = 0x22,
        MIMETruncation = 0x23,
        Wait = 0x24,
        Limit = 0x25,
        Partial = 0x26,
        ConversationMode = 0x27,
        MaxItems = 0x28,
        HeartbeatInterval = 0x29,
    }
    1 contacts "Contacts" {
        Anniversary = 0x05,
        AssistantName = 0x06,
        AssistantTelephoneNumber = 0x07,
        Birthday = 0x08,
        Body = 0x09,
        BodySize = 0x0a,
        BodyTruncated = 0x0b,
        Business2PhoneNumber = 0x0c,
        BusinessCity = 0x0d,
        BusinessCountry = 0x0e,
        BusinessPostalCode = 0x0f,
        BusinessState = 0x10,
        BusinessStreet = 0x11,
        BusinessFaxNumber = 0x12,
        BusinessPhoneNumber = 0x13,
        CarPhoneNumber = 0x14,
        Categories = 0x15,
        Category = 0x16,
        Children = 0x17,
        Child = 0x18,
        CompanyName = 0x19,
        Department = 0x1a,
        Email1Address = 0x1b,
        Email2Address = 0x1c,
        Email3Address = 0x1d,
        FileAs = 0x1e,
        FirstName = 0x1f,
        Home2PhoneNumber = 0x20,
        HomeCity = 0x21,
        HomeCountry = 0x22,
        HomePostalCode = 0x23,
        HomeState = 0x24,
        HomeStreet = 0x25,
        HomeFaxNumber = 0x26,
        HomePhoneNumber = 0x27,
        JobTitle = 0x28,
        LastName = 0x29,
        MiddleName = 0x2a,
        MobilePhoneNumber = 0x2b,
        OfficeLocation = 0x2c,
        OtherCity = 0x2d,
        OtherCountry = 0x2e,
        OtherPostalCode = 0x2f,
        OtherState = 0x30,
        OtherStreet = 0x31,
        PagerNumber = 0x32,
        RadioPhoneNumber = 0x33,
        Spouse = 0x34,
        Suffix = 0x35,
        Title = 0x36,
        WebPage = 0x37,
        YomiCompanyName = 0x38,
        YomiFirstName = 0x39,
        YomiLastName = 0x3a,
        CompressedRTF = 0x3b,
        Picture = 0x3c,
        Alias = 0x3d,
        WeightedRank = 0x3e,
    }
    2 email "Email" {
        Attachment = 0x05,
        Attachments = 0x06,
        AttName = 0x07,
        AttSize = 0x08,
        AttOId = 0x09,
        AttMethod = 0x0a,
        AttRemoved = 0x0b,
        Body = 0x0c,
        BodySize = 0x0d,
        BodyTruncated = 0x0e,
        DateReceived = 0x0f,
        DisplayName = 0x10,
        DisplayTo = 0x11,
        Importance = 0x12,
        MessageClass = 0x13,
        Subject = 0x14,
        Read = 0x15,
        To = 0x16,
        Cc = 0x17,
        From = 0x18,
        ReplyTo = 0x19 as "Reply-To",
        AllDayEvent = 0x1a,
        Categories = 0x1b,
        Category = 0x1c,
        DTStamp = 0x1d,
        EndTime = 0x1e,
        InstanceType = 0x1f,
        BusyStatus = 0x20,
        Location = 0x21,
        MeetingRequest = 0x22,
        Organizer = 0x23,
        RecurrenceId = 0x24,
        Reminder = 0x25,
        ResponseRequested = 0x26,
        Recurrences = 0x27,
        Recurrence = 0x28,
        Recurrence_Type = 0x29,
        Recurrence_Until = 0x2a,
        Recurrence_Occurrences = 0x2b,
        Recurrence_Interval = 0x2c,
        Recurrence_DayOfWeek = 0x2d,
        Recurrence_DayOfMonth = 0x2e,
        Recurrence_WeekOfMonth = 0x2f,
        Recurrence_MonthOfYear = 0x30,
        StartTime = 0x31,
        Sensitivity = 0x32,
        TimeZone = 0x33,
        GlobalObjId = 0x34,
        ThreadTopic = 0x35,
        MIMEData = 0x36,
        MIMETruncated = 0x37,
        MIMESize = 0x38,
        InternetCPID = 0x39,
        Flag = 0x3a,
        FlagStatus = 0x3b,
        ContentClass = 0x3c,
        FlagType = 0x3d,
        CompleteTime = 0x3e,
        DisallowNewTimeProposal = 0x3f,
    }
    3 airnotify "AirNotify" {
        Notify = 0x05,
        Notification = 0x06,
        Version = 0x07,
        LifeTime = 0x08,
        DeviceInfo = 0x09,
        Enable = 0x0a,
        Folder = 0x0b,
        ServerId = 0x0c,
        DeviceAddress = 0x0d,
        ValidCarrierProfiles = 0x0e,
        CarrierProfile = 0x0f,
        Status = 0x10,
        Responses = 0x11,
        Devices = 0x12,
        Device = 0x13,
        Id = 0x14,
        Expiry = 0x15,
        NotifyGUID = 0x16,
        DeviceFriendlyName = 0x17,
    }
    4 calendar "Calendar" {
        TimeZone = 0x05,
        AllDayEvent = 0x06,
        Attendees = 0x07,
        Attendee = 0x08,
        Attendee_Email = 0x09,
        Attendee_Name = 0x0a,
        Body = 0x0b,
        BodyTruncated = 0x0c,
        BusyStatus = 0x0d,
        Categories = 0x0e,
        Category = 0x0f,
        Compressed_RTF = 0x10,
        DTStamp = 0x11,
        EndTime = 0x12,
        Exception = 0x13,
        Exceptions = 0x14,
        Exception_Deleted = 0x15,
        Exception_StartTime = 0x16,
        Location = 0x17,
        MeetingStatus = 0x18,
        Organizer_Email = 0x19,
        Organizer_Name = 0x1a,
        Recurrence = 0x1b,
        Recurrence_Type = 0x1c,
        Recurrence_Until = 0x1d,
        Recurrence_Occurrences = 0x1e,
        Recurrence_Interval = 0x1f,
        Recurrence_DayOfWeek = 0x20,
        Recurrence_DayOfMonth = 0x21,
        Recurrence_WeekOfMonth = 0x22,
        Recurrence_MonthOfYear = 0x23,
        Reminder = 0x24,
        Sensitivity = 0x25,
        Subject = 0x26,
        StartTime = 0x27,
        UID = 0x28,
        Attendee_Status = 0x29,
        Attendee_Type = 0x2a,
        DisallowNewTimeProposal = 0x33,
        ResponseRequested = 0x34,
        AppointmentReplyTime = 0x35,
        ResponseType = 0x36,
        CalendarType = 0x37,
        IsLeapMonth = 0x38,
        FirstDayOfWeek = 0x39,
        OnlineMeetingConfLink = 0x3a,
        OnlineMeetingExternalLink = 0x3b,
        ClientUid = 0x3c,
    }
    5 moveitems "Move" {
        MoveItems = 0x05,
        Move = 0x06,
        SrcMsgId = 0x07,
        SrcFldId = 0x08,
        DstFldId = 0x09,
        Response = 0x0a,
        Status = 0x0b,
        DstMsgId = 0x0c,
    }
    6 itemestimate "GetItemEstimate" {
        GetItemEstimate = 0x05,
        Version = 0x06,
        Collections = 0x07,
        Collection = 0x08,
        Class = 0x09,
        CollectionId = 0x0a,
        DateTime = 0x0b,
        Estimate = 0x0c,
        Response = 0x0d,
        Status = 0x0e,
    }
    7 folderhierarchy "FolderHierarchy" {
        Folders = 0x05,
        Folder = 0x06,
        DisplayName = 0x07,
        ServerId = 0x08,
        ParentId = 0x09,
        Type = 0x0a,
        Response = 0x0b,
        Status = 0x0c,
        ContentClass = 0x0d,
        Changes = 0x0e,
        Add = 0x0f,
        Delete = 0x10,
        Update = 0x11,
        SyncKey = 0x12,
        FolderCreate = 0x13,
        FolderDelete = 0x14,
        FolderUpdate = 0x15,
        FolderSync = 0x16,
        Count = 0x17,
        Version = 0x18,
    }
    8 meetingresponse "MeetingResponse" {
        CalendarId = 0x05,
        CollectionId = 0x06,
        MeetingResponse = 0x07,
        RequestId = 0x08,
        Request = 0x09,
        Result = 0x0a,
        Status = 0x0b,
        UserResponse = 0x0c,
        Version = 0x0d,
        InstanceId = 0x0e,
        ProposedStartTime = 0x10,
        ProposedEndTime = 0x11,
        SendResponse = 0x12,
    }
    9 tasks "Tasks" {
        Body = 0x05,
        BodySize = 0x06,
        BodyTruncated = 0x07,
        Categories = 0x08,
        Category = 0x09,
        Complete = 0x0a,
        DateCompleted = 0x0b,
        DueDate = 0x0c,
        UTCDueDate = 0x0d,
        Importance = 0x0e,
        Recurrence = 0x0f,
        Recurrence_Type = 0x10,
        Recurrence_Start = 0x11,
        Recurrence_Until = 0x12,
        Recurrence_Occurrences = 0x13,
        Recurrence_Interval = 0x14,
        Recurrence_DayOfMonth = 0x15,
        Recurrence_DayOfWeek = 0x16,
        Recurrence_WeekOfMonth = 0x17,
        Recurrence_MonthOfYear = 0x18,
        Recurrence_Regenerate = 0x19,
        Recurrence_DeadOccur = 0x1a,
        ReminderSet = 0x1b,
        ReminderTime = 0x1c,
        Sensitivity = 0x1d,
        StartDate = 0x1e,
        UTCStartDate = 0x1f,
        Subject = 0x20,
        CompressedRTF = 0x21,
        OrdinalDate = 0x22,
        SubOrdinalDate = 0x23,
        CalendarType = 0x24,
        IsLeapMonth = 0x25,
        FirstDayOfWeek = 0x26,
    }
    10 resolverecipients "ResolveRecipients" {
        ResolveRecipients = 0x05,
        Response = 0x06,
        Status = 0x07,
        Type = 0x08,
        Recipient = 0x09,
        DisplayName = 0x0a,
        EmailAddress = 0x0b,
        Certificates = 0x0c,
        Certificate = 0x0d,
        MiniCertificate = 0x0e,
        Options = 0x0f,
        To = 0x10,
        CertificateRetrieval = 0x11,
        RecipientCount = 0x12,
        MaxCertificates = 0x13,
        MaxAmbiguousRecipients = 0x14,
        CertificateCount = 0x15,
        Availability = 0x16,
        StartTime = 0x17,
        EndTime = 0x18,
        MergedFreeBusy = 0x19,
        Picture = 0x1a,
        MaxSize = 0x1b,
        Data = 0x1c,
        MaxPictures = 0x1d,
    }
    11 validatecert "ValidateCert" {
        ValidateCert = 0x05,
        Certificates = 0x06,
        Certificate = 0x07,
        CertificateChain = 0x08,
        CheckCRL = 0x09,
        Status = 0x0a,
    }
    12 contacts2 "Contacts2" {
        CustomerId = 0x05,
        GovernmentId = 0x06,
        IMAddress = 0x07,
        IMAddress2 = 0x08,
        IMAddress3 = 0x09,
        ManagerName = 0x0a,
        CompanyMainPhone = 0x0b,
        AccountName = 0x0c,
        NickName = 0x0d,
        MMS = 0x0e,
    }
    13 ping "Ping" {
        Ping = 0x05,
        AutdState = 0x06,
        Status = 0x07,
        HeartbeatInterval = 0x08,
        Folders = 0x09,
        Folder = 0x0a,
        Id = 0x0b,
        Class = 0x0c,
        MaxFolders = 0x0d,
    }
    14 provision "Provision" {
        Provision = 0x05,
        Policies = 0x06,
        Policy = 0x07,
        PolicyType = 0x08,
        PolicyKey = 0x09,
        Data = 0x0a,
        Status = 0x0b,
        RemoteWipe = 0x0c,
        EASProvisionDoc = 0x0d,
        DevicePasswordEnabled = 0x0e,
        AlphanumericDevicePasswordRequired = 0x0f,
        DeviceEncryptionEnabled = 0x10,
        RequireStorageCardEncryption = 0x10,
        PasswordRecoveryEnabled = 0x11,
        DocumentBrowseEnabled = 0x12,
        AttachmentsEnabled = 0x13,
        MinDevicePasswordLength = 0x14,
        MaxInactivityTimeDeviceLock = 0x15,
        MaxDevicePasswordFailedAttempts = 0x16,
        MaxAttachmentSize = 0x17,
        AllowSimpleDevicePassword = 0x18,
        DevicePasswordExpiration = 0x19,
        DevicePasswordHistory = 0x1a,
        AllowStorageCard = 0x1b,
        AllowCamera = 0x1c,
        RequireDeviceEncryption = 0x1d,
        AllowUnsignedApplications = 0x1e,
        AllowUnsignedInstallationPackages = 0x1f,
        MinDevicePasswordComplexCharacters = 0x20,
        AllowWiFi = 0x21,
        AllowTextMessaging = 0x22,
        AllowPOPIMAPEmail = 0x23,
        AllowBluetooth = 0x24,
        AllowIrDA = 0x25,
        RequireManualSyncWhenRoaming = 0x26,
        AllowDesktopSync = 0x27,
        MaxCalendarAgeFilter = 0x28,
        AllowHTMLEmail = 0x29,
        MaxEmailAgeFilter = 0x2a,
        MaxEmailBodyTruncationSize = 0x2b,
        MaxEmailHTMLBodyTruncationSize = 0x2c,
        RequireSignedSMIMEMessages = 0x2d,
        RequireEncryptedSMIMEMessages = 0x2e,
        RequireSignedSMIMEAlgorithm = 0x2f,
        RequireEncryptionSMIMEAlgorithm = 0x30,
        AllowSMIMEEncryptionAlgorithmNegotiation = 0x31,
        AllowSMIMESoftCerts = 0x32,
        AllowBrowser = 0x33,
        AllowConsumerEmail = 0x34,
        AllowRemoteDesktop = 0x35,
        AllowInternetSharing = 0x36,
        UnapprovedInROMApplicationList = 0x37,
        ApplicationName = 0x38,
        ApprovedApplicationList = 0x39,
        Hash = 0x3a,
        AccountOnlyRemoteWipe = 0x3b,
    }
    15 search "Search" {
        Search = 0x05,
        Store = 0x07,
        Name = 0x08,
        Query = 0x09,
        Options = 0x0a,
        Range = 0x0b,
        Status = 0x0c,
        Response = 0x0d,
        Result = 0x0e,
        Properties = 0x0f,
        Total = 0x10,
        EqualTo = 0x11,
        Value = 0x12,
        And = 0x13,
        Or = 0x14,
        FreeText = 0x15,
        DeepTraversal = 0x17,
        LongId = 0x18,
        RebuildResults = 0x19,
        LessThan = 0x1a,
        GreaterThan = 0x1b,
        Schema = 0x1c,
        Supported = 0x1d,
        UserName = 0x1e,
        Password = 0x1f,
        ConversationId = 0x20,
        Picture = 0x21,
        MaxSize = 0x22,
        MaxPictures = 0x23,
    }
    16 gal "Gal" {
        DisplayName = 0x05,
        Phone = 0x06,
        Office = 0x07,
        Title = 0x08,
        Company = 0x09,
        Alias = 0x0a,
        FirstName = 0x0b,
        LastName = 0x0c,
        HomePhone = 0x0d,
        MobilePhone = 0x0e,
        EmailAddress = 0x0f,
        Picture = 0x10,
        Status = 0x11,
        Data = 0x12,
    }
    17 airsyncbase "AirSyncBase" {
        BodyPreference = 0x05,
        Type = 0x06,
        TruncationSize = 0x07,
        AllOrNone = 0x08,
        Body = 0x0a,
        Data = 0x0b,
        EstimatedDataSize = 0x0c,
        Truncated = 0x0d,
        Attachments = 0x0e,
        Attachment = 0x0f,
        DisplayName = 0x10,
        FileReference = 0x11,
        Method = 0x12,
        ContentId = 0x13,
        ContentLocation = 0x14,
        IsInline = 0x15,
        NativeBodyType = 0x16,
        ContentType = 0x17,
        Preview = 0x18,
        BodyPartPreference = 0x19,
        BodyPart = 0x1a,
        Status = 0x1b,
        Add = 0x1c,
        Delete = 0x1d,
        ClientId = 0x1e,
        Content = 0x1f,
        Location = 0x20,
        Annotation = 0x21,
        Street = 0x22,
        City = 0x23,
        State = 0x24,
        Country = 0x25,
        PostalCode = 0x26,
        Latitude = 0x27,
        Longitude = 0x28,
        Accuracy = 0x29,
        Altitude = 0x2a,
        AltitudeAccuracy = 0x2b,
        LocationUri = 0x2c,
        InstanceId = 0x2d,
    }
    18 settings "Settings" {
        Settings = 0x05,
        Status = 0x06,
        Get = 0x07,
        Set = 0x08,
        Oof = 0x09,
        OofState = 0x0a,
        StartTime = 0x0b,
        EndTime = 0x0c,
        OofMessage = 0x0d,
        AppliesToInternal = 0x0e,
        AppliesToExternalKnown = 0x0f,
        AppliesToExternalUnknown = 0x10,
        Enabled = 0x11,
        ReplyMessage = 0x12,
        BodyType = 0x13,
        DevicePassword = 0x14,
        Password = 0x15,
        DeviceInformation = 0x16,
        Model = 0x17,
        IMEI = 0x18,
        FriendlyName = 0x19,
        OS = 0x1a,
        OSLanguage = 0x1b,
        PhoneNumber = 0x1c,
        UserInformation = 0x1d,
        EmailAddresses = 0x1e,
        SmtpAddress = 0x1f,
        UserAgent = 0x20,
        EnableOutboundSMS = 0x21,
        MobileOperator = 0x22,
        PrimarySmtpAddress = 0x23,
        Accounts = 0x24,
        Account = 0x25,
        AccountId = 0x26,
        AccountName = 0x27,
        UserDisplayName = 0x28,
        SendDisabled = 0x29,
        RightsManagementInformation = 0x2b,
    }
    19 documentlibrary "DocumentLibrary" {
        LinkId = 0x05,
        DisplayName = 0x06,
        IsFolder = 0x07,
        CreationDate = 0x08,
        LastModifiedDate = 0x09,
        IsHidden = 0x0a,
        ContentLength = 0x0b,
        ContentType = 0x0c,
    }
    20 itemoperations "ItemOperations" {
        ItemOperations = 0x05,
        Fetch = 0x06,
        Store = 0x07,
        Options = 0x08,
        Range = 0x09,
        Total = 0x0a,
        Properties = 0x0b,
        Data = 0x0c,
        Status = 0x0d,
        Response = 0x0e,
        Version = 0x0f,
        Schema = 0x10,
        Part = 0x11,
        EmptyFolderContents = 0x12,
        DeleteSubFolders = 0x13,
        UserName = 0x14,
        Password = 0x15,
        Move = 0x16,
        DstFldId = 0x17,
        ConversationId = 0x18,
        MoveAlways = 0x19,
    }
    21 composemail "ComposeMail" {
        SendMail = 0x05,
        SmartForward = 0x06,
        SmartReply = 0x07,
        SaveInSentItems = 0x08,
        ReplaceMime = 0x09,
        Source = 0x0b,
        FolderId = 0x0c,
        ItemId = 0x0d,
        LongId = 0x0e,
        InstanceId = 0x0f,
        MIME = 0x10,
        ClientId = 0x11,
        Status = 0x12,
        AccountId = 0x13,
        Forwardees = 0x15,
        Forwardee = 0x16,
        ForwardeeName = 0x17,
        ForwardeeEmail = 0x18,
    }
    22 email2 "Email2" {
        UmCallerID = 0x05,
        UmUserNotes = 0x06,
        UmAttDuration = 0x07,
        UmAttOrder = 0x08,
        ConversationId = 0x09,
        ConversationIndex = 0x0a,
        LastVerbExecuted = 0x0b,
        LastVerbExecutionTime = 0x0c,
        ReceivedAsBcc = 0x0d,
        Sender = 0x0e,
        CalendarType = 0x0f,
        IsLeapMonth = 0x10,
        AccountId = 0x11,
        FirstDayOfWeek = 0x12,
        MeetingMessageType = 0x13,
        IsDraft = 0x15,
        Bcc = 0x16,
        Send = 0x17,
    }
    23 notes "Notes" {
        Subject = 0x05,
        MessageClass = 0x06,
        LastModifiedDate = 0x07,
        Categories = 0x08,
        Category = 0x09,
    }
    24 rightsmanagement "RightsManagement" {
        RightsManagementSupport = 0x05,
        RightsManagementTemplates = 0x06,
        RightsManagementTemplate = 0x07,
        RightsManagementLicense = 0x08,
        EditAllowed = 0x09,
        ReplyAllowed = 0x0a,
        ReplyAllAllowed = 0x0b,
        ForwardAllowed = 0x0c,
        ModifyRecipientsAllowed = 0x0d,
        ExtractAllowed = 0x0e,
        PrintAllowed = 0x0f,
        ExportAllowed = 0x10,
        ProgrammaticAccessAllowed = 0x11,
        RMOwner = 0x12,
        ContentExpiryDate = 0x13,
        TemplateID = 0x14,
        TemplateName = 0x15,
        TemplateDescription = 0x16,
        ContentOwner = 0x17,
        RemoveRightsManagementDistribution = 0x18,
    }
    25 find "Find" {
        Find = 0x05,
        SearchId = 0x06,
        ExecuteSearch = 0x07,
        MailBoxSearchCriterion = 0x08,
        Query = 0x09,
        Status = 0x0a,
        FreeText = 0x0b,
        Options = 0x0c,
        Range = 0x0d,
        DeepTraversal = 0x0e,
        Response = 0x11,
        Result = 0x12,
        Properties = 0x13,
        Preview = 0x14,
        HasAttachments = 0x15,
        Total = 0x16,
        DisplayCc = 0x17,
        DisplayBcc = 0x18,
        GalSearchCriterion = 0x19,
        MaxPictures = 0x20,
        MaxSize = 0x21,
        Picture = 0x22,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_consistent() {
        for (i, (page, ns, tags)) in PAGES.iter().enumerate() {
            assert_eq!(usize::from(*page), i, "{ns}: pages in order, none missing");
            for (t, n) in tags.iter() {
                assert!((0x05..=0x3f).contains(t), "{ns}:{n} token 0x{t:02x}");
                // Every name finds its token back (Provision 0x10 has two names: both find it).
                assert_eq!(Tag::by_name(ns, n), Some(Tag::new(*page, *t)), "{ns}:{n}");
            }
            let mut names: Vec<_> = tags.iter().map(|(_, n)| *n).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), tags.len(), "{ns}: a name twice");
        }
    }

    #[test]
    fn lookups_by_name_and_token() {
        assert_eq!(folderhierarchy::FolderSync, Tag::new(7, 0x16));
        assert_eq!(Tag::by_name("AirSync:", "Sync"), Some(airsync::Sync));
        assert_eq!(airsyncbase::BodyPreference.name(), Some("BodyPreference"));
        assert_eq!(email::ReplyTo.name(), Some("Reply-To"));
        assert_eq!(page_of("GetItemEstimate:"), Some(6));
        assert_eq!(Tag::by_name("AirSync", "NoSuchTag"), None);
        assert_eq!(format!("{:?}", ping::Ping), "Ping:Ping");
        assert_eq!(format!("{:?}", Tag::new(0, 0x3f)), "AirSync:0x3f");
        assert!(composemail::MIME.is_opaque());
        assert!(!airsync::SyncKey.is_opaque());
    }
}
